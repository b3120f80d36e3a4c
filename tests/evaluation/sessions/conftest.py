"""The session fixtures (tests/sessions_world.py)."""

from tests.sessions_world import cache_root, environment, host, session, step  # noqa: F401
