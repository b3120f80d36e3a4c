"""The admin's banner: every page of the UI tells an admin when verification cannot run,
and why (the /healthz sandbox check), without starting a sandbox per page view."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evaluation.sandbox import probe
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db
BANNER = 'id="sandbox-alert"'


@pytest.fixture(autouse=True)
def _fresh_probe():
    probe._cache.clear()
    yield
    probe._cache.clear()


@pytest.fixture
def no_bwrap(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # the platform finds bwrap on the PATH: here, nowhere


def page(client, user, name="ui:task-list") -> str:
    client.force_login(user)
    response = client.get(reverse(name))
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.parametrize("who", ["admin role", "superuser", "staff"])
def test_an_admin_sees_that_verification_cannot_run_and_why(client, no_bwrap, who):
    user = {
        "admin role": lambda: UserFactory(username="ada", roles=["admin"]),
        "superuser": lambda: UserFactory(username="sue", is_superuser=True, is_staff=True),
        "staff": lambda: UserFactory(username="stan", is_staff=True, roles=["curator"]),
    }[who]()
    html = page(client, user)
    assert BANNER in html
    assert "Verification cannot run:" in html and "bubblewrap (bwrap) is not installed" in html


def test_a_curator_does_not_see_the_banner(client, no_bwrap, curator):
    assert BANNER not in page(client, curator)


def test_no_banner_when_the_backend_runs_a_sandbox(client, admin_user):
    assert BANNER not in page(client, admin_user)


def test_the_banner_names_a_broken_backend_too(client, admin_user, monkeypatch):
    monkeypatch.setenv("SANDBOX_PYTHON", "/usr/bin/true")  # no interpreter: no sandbox ever greets
    assert "a bwrap sandbox does not start" in page(client, admin_user)


def test_page_views_share_one_probe_while_it_is_fresh(client, admin_user, monkeypatch):
    probes = []
    real = probe.backend_probe

    def counted(backend: str):  # a spy on our own function, not a stand-in: the real probe runs
        probes.append(backend)
        return real(backend)

    monkeypatch.setattr(probe, "backend_probe", counted)
    for _ in range(5):
        assert BANNER not in page(client, admin_user)
    assert probes == ["bwrap"]


def test_with_redis_the_banner_reads_the_workers_reports(client, admin_user, redis_broker):
    from config.ops import health

    health._alerts.clear()
    html = page(client, admin_user)
    assert BANNER in html and "no sandbox worker has reported recently" in html
