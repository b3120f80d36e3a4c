from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from typing import Any

import pytest
from rest_framework.test import APIClient

from tasks_app.services import api_token_create
from tests import components
from tests.factories import UserFactory

# Requests kept for replay go to a scratch place, not the checkout's var/, removed when
# the session ends (one was left in /tmp by every run).
if "SANDBOX_REPLAY_DIR" not in os.environ:
    os.environ["SANDBOX_REPLAY_DIR"] = tempfile.mkdtemp(prefix="replay-tests-")
    atexit.register(shutil.rmtree, os.environ["SANDBOX_REPLAY_DIR"], ignore_errors=True)


def pytest_configure(config: pytest.Config) -> None:
    components.register_markers(config)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test marked with a component (tests/components.py) fails before its fixtures
    start when that component is missing, unless $TEST_ALLOW_MISSING names it."""
    components.require_marked(item)


@pytest.fixture(autouse=True)
def _verification_not_enqueued_on_submit(settings: Any) -> None:
    """Submitting in a test does not enqueue a verification (tests that want the
    pipeline run it themselves, or turn this back on)."""
    settings.VERIFICATION = {**settings.VERIFICATION, "ON_SUBMIT": False}


@pytest.fixture
def curator(db: Any) -> Any:
    return UserFactory(username="cora", roles=["curator"])


@pytest.fixture
def other_curator(db: Any) -> Any:
    return UserFactory(username="colin", roles=["curator"])


@pytest.fixture
def reviewer(db: Any) -> Any:
    return UserFactory(username="rita", roles=["reviewer"])


@pytest.fixture
def curator_reviewer(db: Any) -> Any:
    """Someone who both authors and reviews: four eyes must still hold for them."""
    return UserFactory(username="cris", roles=["curator", "reviewer"])


@pytest.fixture
def trainer(db: Any) -> Any:
    return UserFactory(username="trey", roles=["trainer"])


@pytest.fixture
def admin_user(db: Any) -> Any:
    return UserFactory(username="ada", roles=["admin"])


def token_client(user: Any, scopes: list[str]) -> APIClient:
    client = APIClient()
    issued = api_token_create(user=user, name="test", scopes=scopes)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.secret}")
    return client


@pytest.fixture
def api_as() -> Any:
    """api_as(user, scopes) -> an APIClient authenticated with a fresh scoped token."""
    return token_client


@pytest.fixture(autouse=True)
def fast_password_hashing(settings: Any) -> None:
    # PBKDF2 costs ~0.4 s a user; tests need a hash, not its strength.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _fresh_throttle_counts() -> None:
    """Throttle counts live in the cache; each test starts with none."""
    from django.core.cache import cache

    cache.clear()


# -- real Celery workers on a real Redis broker (tests/evaluation/workers.py) ------------------


@pytest.fixture
def broker() -> Any:
    """This process's Celery app, publishing to Redis database 5 (emptied before and after)."""
    from config.celery import app
    from tests.evaluation.workers import REDIS_URL, VISIBILITY_TIMEOUT_S, flush_broker, producer_on

    flush_broker()
    try:
        with producer_on(app, REDIS_URL, {"visibility_timeout": VISIBILITY_TIMEOUT_S}):
            yield app
    finally:
        flush_broker()


@pytest.fixture
def workers(transactional_db: Any, broker: Any, tmp_path: Any) -> Any:
    """Start workers with `workers.start(name, ..., **env)`; all are stopped afterwards
    (before the test database is flushed: they hold connections to it)."""
    from django.db import connection

    from tests.evaluation.workers import REDIS_URL, VISIBILITY_TIMEOUT_S, WorkerPool, database_url

    components.require("postgres")  # worker processes share the test database: SQLite's is in memory

    base_env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("CELERY_", "VERIFY_", "SANDBOX_POOL"))},
        "DATABASE_URL": database_url(connection.settings_dict),
        "CELERY_BROKER_URL": REDIS_URL,
        "CELERY_VISIBILITY_TIMEOUT": str(VISIBILITY_TIMEOUT_S),
        "SANDBOX_BACKEND": "bwrap",
        "VERIFY_ON_SUBMIT": "0",
        "VERIFY_REPEATS": "2",
        "VERIFY_MUTANTS": "8",
        "LOG_LEVEL": "INFO",
    }
    pool = WorkerPool(base_env=base_env, log_dir=tmp_path)
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture(autouse=True)
def _no_cached_versions() -> None:
    """A worker keeps task versions by id (they never change); a test database that
    rolls back hands the same ids to other versions, so each test starts with none."""
    from trainer_bridge.services import reward_runs

    reward_runs._VERSION_CACHE.clear()


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    """A transactional test without serialized_rollback ends with a flush that runs
    post_migrate, which re-creates content types and permissions; the next test that
    restores its serialized rows then fails on duplicates (a whole run of errors, far from
    the test that caused them). Refuse such a test at collection, naming it."""
    wrong = []
    for item in items:
        marker = item.get_closest_marker("django_db")
        if marker is not None and marker.kwargs.get("transaction") and not marker.kwargs.get("serialized_rollback"):
            wrong.append(item.nodeid)
    if wrong:
        raise pytest.UsageError(
            "django_db(transaction=True) needs serialized_rollback=True here (see tests/conftest.py): "
            + ", ".join(wrong[:10])
        )
