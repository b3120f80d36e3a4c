"""REST API of pools, snapshots and their export (under /api/v1/)."""
