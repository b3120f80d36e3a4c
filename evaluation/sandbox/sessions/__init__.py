"""Agent sessions: one sandbox kept for a whole episode, stepped, forked, judged."""
