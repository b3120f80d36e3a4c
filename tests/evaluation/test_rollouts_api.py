"""The rollouts and difficulty API: uploads, trusted outcomes, pass@k, the latest fit."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from evaluation.difficulty.fits import difficulty_fit_create
from evaluation.models import Attempt, SampleUpload
from tests.factories import UserFactory, make_task

pytestmark = pytest.mark.django_db


def _jsonl(rows: list[dict]) -> bytes:
    return "\n".join(json.dumps(r) for r in rows).encode()


@pytest.fixture
def tasks(curator):
    return [make_task(owner=curator, slug="add-two"), make_task(owner=curator, slug="add-three", title="Again")]


def test_a_samples_file_is_stored_once_and_queued_after_commit(
    tasks, trainer, api_as, django_capture_on_commit_callbacks
):
    client = api_as(trainer, ["write", "read"])
    body = _jsonl(
        [{"task_id": "add-two", "completion": "    return a + b\n"}] * 1
        + [{"task_id": "add-two", "completion": "```python\ndef add(a, b):\n    return 0\n```", "sample_id": "x"}]
    )
    url = reverse("api-samples") + "?solver=policy-7"
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        first = client.post(url, body, content_type="application/x-ndjson")
    assert first.status_code == 201 and len(callbacks) == 1
    assert (first.json()["samples"], first.json()["created"], first.json()["solver"]) == (2, 2, "policy-7")
    again = client.post(url, body, content_type="application/x-ndjson")
    assert again.status_code == 200 and again.json()["repeated"] and Attempt.objects.count() == 2
    detail = client.get(reverse("api-sample-upload", args=[first.json()["id"]]))
    assert detail.json()["total"] == 2 and detail.json()["finished"] is False
    assert client.get(reverse("api-sample-upload", args=[999])).json()["error"]["code"] == "not_found"


def test_a_bad_samples_file_is_refused_in_the_error_shape_with_its_line(tasks, curator, api_as):
    client = api_as(curator, ["write"])
    body = b'{"task_id": "add-two", "completion": "x"}\n{"task_id": "nope", "completion": "y"}\n'
    response = client.post(reverse("api-samples") + "?solver=m", body, content_type="application/x-ndjson")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid" and error["details"] == {"line": 2, "reason": "no task 'nope' in the catalogue"}
    assert not SampleUpload.objects.exists()
    empty = client.post(reverse("api-samples"), {}, format="multipart")
    assert empty.status_code == 400 and "file" in empty.json()["error"]["details"]


def test_only_a_trainer_posts_trusted_outcomes_and_a_retry_adds_nothing(tasks, trainer, curator, api_as):
    outcomes = {"outcomes": [{"task_id": "add-two", "solver": "policy", "sample_id": str(i), "passed": i % 2 == 0}
                             for i in range(4)]}  # fmt: skip
    client = api_as(trainer, ["write"])
    assert client.post(reverse("api-outcomes"), outcomes, format="json").json() == {"created": 4, "skipped": 0}
    assert client.post(reverse("api-outcomes"), outcomes, format="json").json() == {"created": 0, "skipped": 4}
    assert Attempt.objects.filter(trusted=True, status="passed").count() == 2
    denied = api_as(curator, ["write"]).post(reverse("api-outcomes"), outcomes, format="json")
    assert denied.status_code == 403 and "trainer" in denied.json()["error"]["message"]
    unknown = {"outcomes": [{"task_id": "add-two", "solver": "p", "sample_id": "9", "passed": True},
                            {"task_id": "ghost", "solver": "p", "sample_id": "9", "passed": True}]}  # fmt: skip
    refused = client.post(reverse("api-outcomes"), unknown, format="json")
    assert refused.status_code == 400 and refused.json()["error"]["details"] == {"index": 1}
    malformed = client.post(reverse("api-outcomes"), {"outcomes": [{"task_id": "add-two"}]}, format="json")
    assert malformed.status_code == 400 and "outcomes" in malformed.json()["error"]["details"]


def test_pass_at_k_and_the_latest_fit_say_what_is_measured(tasks, trainer, curator, api_as):
    client = api_as(trainer, ["write", "read"])
    assert client.get(reverse("api-difficulty")).status_code == 404
    rows = [{"task_id": t, "solver": s, "sample_id": str(i), "passed": ok}
            for t, s, oks in (("add-two", "strong", [1, 1, 1, 1, 1, 0]), ("add-three", "strong", [1, 0, 0, 1, 0, 0]),
                              ("add-two", "weak", [1, 0, 1, 0, 0, 0]), ("add-three", "weak", [0, 0, 0, 0, 0, 1]))
            for i, ok in enumerate(map(bool, oks))]  # fmt: skip
    client.post(reverse("api-outcomes"), {"outcomes": rows}, format="json")
    table = client.get(reverse("api-pass-at-k"), {"solver": "strong"}).json()
    assert [(r["task"], r["attempts"], r["passes"]) for r in table] == [("add-three", 6, 2), ("add-two", 6, 5)]
    difficulty_fit_create(bootstrap=10)
    fit = client.get(reverse("api-difficulty"), {"solver": "weak"}).json()
    assert [r["task"] for r in fit["tasks"]] == ["add-two", "add-three"]  # easiest first
    assert {r["source"] for r in fit["tasks"]} == {"measured"} and fit["target"]["against"] == "solver weak"
    assert fit["solvers"][0]["solver"] == "strong"
    bad = client.get(reverse("api-difficulty"), {"solver": "nobody"})
    assert bad.status_code == 400 and "nobody" in bad.json()["error"]["message"]
    assert client.post(reverse("api-difficulty")).status_code == 403  # a trainer may not start a refit
    assert api_as(curator, ["write"]).post(reverse("api-difficulty")).status_code == 202


def test_a_user_without_a_role_sees_nothing(api_as):
    nobody = UserFactory(username="nobody", roles=[])
    assert api_as(nobody, ["read"]).get(reverse("api-pass-at-k")).status_code == 403
