"""REST API of rollouts and difficulty (under /api/v1/, beside the authoring API)."""
