"""The proposed-tests API: list a version's proposals, accept them into a new version,
dismiss them; bad bodies, unknown ids and missing roles in the one error shape."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evaluation.models import ProposedTest
from tasks_app.models import TaskVersion
from tests.evaluation.generated_world import WRONG_ID, proposals_of, weak_verification

pytestmark = pytest.mark.django_db

ACCEPT = "/api/v1/proposed-tests/accept"
DISMISS = "/api/v1/proposed-tests/dismiss"


def _list(version) -> str:
    return f"/api/v1/versions/{version.content_hash}/proposed-tests"


def test_the_routes_are_where_the_docs_say():
    assert reverse("api-proposed-tests-accept") == ACCEPT and reverse("api-proposed-tests-dismiss") == DISMISS
    assert reverse("api-version-proposed-tests", args=["0" * 64]) == f"/api/v1/versions/{'0' * 64}/proposed-tests"


def test_a_version_lists_its_proposals_with_what_they_test_and_their_state(curator, reviewer, api_as):
    verification = weak_verification(curator, seed=5)
    version = verification.version
    proposal = proposals_of(verification)[0]
    listed = api_as(reviewer, ["read"]).get(_list(version))
    assert listed.status_code == 200
    (item,) = listed.json()
    assert item == {
        "id": proposal.pk, "task": "add-two", "version": 1, "content_hash": version.content_hash,
        "verification": verification.pk, "reason": "counterexample", "mutant_digest": WRONG_ID,
        "mutant_description": "a + b -> a - b past 100", "args": "(100, 1)", "kwargs": "{}", "expected": "101",
        "got": "99", "test": "assert add(100, 1) == 101", "generator": "typed-mutation", "seed": 5,
        "state": "proposed", "accepted_in": None, "decided_at": None, "created_at": item["created_at"],
    }  # fmt: skip
    assert api_as(reviewer, ["read"]).get(_list(version) + "?state=accepted").json() == []
    assert len(api_as(reviewer, ["read"]).get(_list(version) + "?state=proposed").json()) == 1


def test_listing_refuses_a_bad_hash_an_unknown_one_and_a_bad_state(curator, api_as):
    version = weak_verification(curator).version
    client = api_as(curator, ["read"])
    bad = client.get("/api/v1/versions/not-a-hash/proposed-tests")
    assert bad.status_code == 400 and "content_hash" in bad.json()["error"]["details"]
    unknown = client.get(f"/api/v1/versions/{'0' * 64}/proposed-tests")
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "not_found"
    state = client.get(_list(version) + "?state=maybe")
    assert state.status_code == 400 and state.json()["error"]["details"] == {
        "state": ["One of: proposed, accepted, dismissed."]
    }


def test_accepting_makes_a_new_version_per_task_and_reports_it(curator, api_as):
    first = weak_verification(curator, slug="first")
    second = weak_verification(curator, slug="second", seed=9)
    ids = [proposals_of(first)[0].pk, proposals_of(second)[0].pk]
    answer = api_as(curator, ["read", "write"]).post(ACCEPT, {"ids": ids}, format="json")
    assert answer.status_code == 200
    made = {v.task.slug: v for v in TaskVersion.objects.filter(number=2).select_related("task")}
    assert answer.json() == {
        "accepted": 2,
        "versions": [
            {"task": slug, "number": 2, "content_hash": made[slug].content_hash} for slug in ("first", "second")
        ],
        "skipped": [],
    }
    assert made["second"].hidden_tests[-1] == "assert add(100, 1) == 101"
    assert made["second"].generated_tests[0]["seed"] == 9 and made["second"].generated_tests[0]["hidden_index"] == 2
    # Accepted ones now say where they went; accepting them again is skipped with the reason.
    listed = api_as(curator, ["read"]).get(_list(first.version)).json()
    assert listed[0]["state"] == "accepted"
    assert listed[0]["accepted_in"] == {"number": 2, "content_hash": made["first"].content_hash}
    again = api_as(curator, ["write"]).post(ACCEPT, {"ids": ids[:1]}, format="json")
    assert again.status_code == 200
    assert again.json() == {"accepted": 0, "versions": [],
                            "skipped": [{"task": "first", "reason": "already accepted or dismissed"}]}  # fmt: skip
    assert TaskVersion.objects.filter(task__slug="first").count() == 2


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ({"ids": "1"}, "ids"),
        ({"ids": []}, "ids"),
        ({"ids": [1, "x"]}, "ids[1]"),
        ({"ids": [0]}, "ids[0]"),
        ({}, "ids"),
        ([1, 2], "non_field_errors"),
    ],
)
def test_a_bad_body_is_a_400_naming_the_field(curator, api_as, body, where):
    weak_verification(curator)
    for url in (ACCEPT, DISMISS):
        answer = api_as(curator, ["write"]).post(url, body, format="json")
        assert answer.status_code == 400, (url, body)
        error = answer.json()["error"]
        assert error["code"] == "invalid" and where in error["details"] and error["message"].startswith(where)
    assert TaskVersion.objects.count() == 1 and not ProposedTest.objects.exclude(state="proposed").exists()


def test_unknown_ids_are_a_400_that_names_them_and_nothing_is_accepted(curator, api_as):
    known = proposals_of(weak_verification(curator))[0].pk
    answer = api_as(curator, ["write"]).post(ACCEPT, {"ids": [known, 9998, 9999]}, format="json")
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["details"]["unknown"] == [9998, 9999] and "9998, 9999" in error["message"]
    assert TaskVersion.objects.count() == 1 and ProposedTest.objects.get(pk=known).state == "proposed"


def test_a_reviewer_without_the_curator_role_or_a_read_only_token_gets_403(curator, reviewer, api_as):
    known = proposals_of(weak_verification(curator))[0].pk
    for url in (ACCEPT, DISMISS):
        refused = api_as(reviewer, ["read", "write"]).post(url, {"ids": [known]}, format="json")
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "permission_denied"
        assert "curator" in refused.json()["error"]["message"]
        read_only = api_as(curator, ["read"]).post(url, {"ids": [known]}, format="json")
        assert read_only.status_code == 403 and "'write' scope" in read_only.json()["error"]["message"]
    assert ProposedTest.objects.get(pk=known).state == "proposed" and TaskVersion.objects.count() == 1


def test_dismissing_counts_only_what_was_still_proposed(curator, api_as):
    verification = weak_verification(curator)
    known = proposals_of(verification)[0].pk
    client = api_as(curator, ["write"])
    assert client.post(DISMISS, {"ids": [known]}, format="json").json() == {"dismissed": 1}
    assert client.post(DISMISS, {"ids": [known]}, format="json").json() == {"dismissed": 0}
    dismissed = ProposedTest.objects.get(pk=known)
    assert dismissed.state == "dismissed" and dismissed.decided_by == curator and dismissed.decided_at
    skipped = client.post(ACCEPT, {"ids": [known]}, format="json").json()
    assert skipped["accepted"] == 0 and skipped["skipped"][0]["reason"] == "already accepted or dismissed"


def test_the_openapi_schema_documents_the_three_routes(curator, client):
    client.force_login(curator)
    schema = client.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    paths = schema["paths"]
    assert "post" in paths["/api/v1/proposed-tests/accept"] and "post" in paths["/api/v1/proposed-tests/dismiss"]
    listed = paths["/api/v1/versions/{content_hash}/proposed-tests"]["get"]
    assert [p["name"] for p in listed["parameters"] if p["in"] == "query"] == ["state"]
    accept = paths["/api/v1/proposed-tests/accept"]["post"]
    assert set(accept["responses"]) >= {"200", "400", "403"}
    body = accept["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    assert schema["components"]["schemas"][body]["properties"]["ids"]["type"] == "array"
