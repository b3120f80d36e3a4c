"""PostgreSQL restarted while the UI and the API are in use, against gunicorn.

While the database is down a page is a 503 that says the database is not answering
(with Retry-After), an API call the same in the one error shape: never a bare 500.
Once it is back, the very next requests work with the same session and the same
token (the connections are checked and replaced), and a write lands exactly once.

The database here is a cluster of the test's own (tests/faults/services.py): the
shared server holds every other test's database and must never go down mid-suite.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.evaluation.workers import ROOT
from tests.factories import content_data

from .services import PrivatePostgres, free_port

pytestmark = pytest.mark.slow

PASSWORD = "a-fault-test-password"
SETUP = f"""
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from tasks_app.services import api_token_create
user = get_user_model().objects.create_user("cora", password={PASSWORD!r})
user.groups.add(Group.objects.get_or_create(name="curator")[0])
print(api_token_create(user=user, name="fault", scopes=["read", "write"]).secret)
"""


@pytest.fixture
def database() -> Any:
    cluster = PrivatePostgres().create()
    yield cluster
    cluster.remove()


def _env(database_url: str, var: Path) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")}
    return {**keep, "DATABASE_URL": database_url, "PLATFORM_VAR_DIR": str(var), "DJANGO_DEBUG": "0",
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "SECURE_SSL_REDIRECT": "0", "SESSION_COOKIE_SECURE": "0", "CSRF_COOKIE_SECURE": "0",
            "CELERY_BROKER_URL": "memory://", "VERIFY_ON_SUBMIT": "0", "LOG_LEVEL": "WARNING",
            "DATABASE_CONNECT_TIMEOUT": "2"}  # fmt: skip


def _manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.fixture
def web(database: PrivatePostgres, tmp_path: Path) -> Any:
    env = _env(database.url, tmp_path / "var")
    _manage(env, "migrate", "--noinput")
    _manage(env, "collectstatic", "--noinput")  # as deployed: hashed names from the manifest
    token = _manage(env, "shell", "-c", SETUP).strip().splitlines()[-1]
    port = free_port()
    log = (tmp_path / "gunicorn.log").open("wb")
    server = subprocess.Popen(
        [str(Path(sys.executable).with_name("gunicorn")), "config.wsgi", "--bind", f"127.0.0.1:{port}",
         "--workers", "1", "--worker-class", "gthread", "--threads", "4"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    log.close()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            requests.get(url + "/livez", timeout=5)
            break
        except requests.RequestException:  # not listening yet, or still loading Django
            if server.poll() is not None or time.monotonic() > deadline:
                raise AssertionError((tmp_path / "gunicorn.log").read_text()[-3000:]) from None
            time.sleep(0.2)
    yield url, token, tmp_path / "gunicorn.log"
    os.killpg(server.pid, signal.SIGKILL)
    server.wait(timeout=10)


def _signed_in(url: str) -> requests.Session:
    session = requests.Session()
    form = session.get(url + "/accounts/login/", timeout=10)
    assert form.status_code == 200 and "csrftoken" in session.cookies, (form.status_code, form.text[:3000])
    answer = session.post(url + "/accounts/login/", timeout=10, allow_redirects=False,
                          data={"username": "cora", "password": PASSWORD,
                                "csrfmiddlewaretoken": session.cookies["csrftoken"]},
                          headers={"Referer": url + "/accounts/login/"})  # fmt: skip
    assert answer.status_code == 302, answer.text[:500]
    return session


def test_the_ui_and_the_api_ride_out_a_database_restart(database: PrivatePostgres, web: Any) -> None:
    url, token, log = web
    api = {"Authorization": f"Bearer {token}"}
    try:
        browser = _signed_in(url)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{log.read_text()[-3000:]}") from None
    assert browser.get(url + "/", timeout=10).status_code == 200
    assert requests.get(url + "/api/v1/tasks/", headers=api, timeout=10).status_code == 200

    database.stop()
    page = browser.get(url + "/", timeout=30)
    assert page.status_code == 503, page.text[:500]
    assert "database is not answering" in page.text and page.headers.get("Retry-After")
    call = requests.get(url + "/api/v1/tasks/", headers=api, timeout=30)
    assert call.status_code == 503
    assert call.json()["error"]["code"] == "database_unavailable" and call.headers.get("Retry-After")

    database.start()
    page = browser.get(url + "/", timeout=30)  # the same session: it was in the database all along
    assert page.status_code == 200 and "Database unavailable" not in page.text
    body = {"slug": "after-restart", "title": "After a restart", "version": content_data()}
    created = requests.post(url + "/api/v1/tasks/", headers=api, json=body, timeout=30)
    assert created.status_code == 201, created.text[:1000]
    listed = requests.get(url + "/api/v1/tasks/", headers=api, timeout=10).json()
    slugs = [task["slug"] for task in listed.get("results", listed)]
    assert slugs.count("after-restart") == 1
