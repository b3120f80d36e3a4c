"""Operational endpoints and plumbing that span every app: health (/healthz, /livez),
Prometheus metrics (/metrics), the request-metrics middleware and the JSON log formatter.

It lives in config/ (the project) rather than in an app because it reads all of them:
the database, the Celery broker, the sandbox workers' reports (docs/operations.md).
"""
