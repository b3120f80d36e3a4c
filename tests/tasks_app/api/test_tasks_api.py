from __future__ import annotations

import pytest

from tasks_app.models import State, Task, TaskVersion, Transition
from tasks_app.services import task_submit, task_transition
from tests.factories import content_data, make_task

pytestmark = pytest.mark.django_db

WRITE = ["read", "write"]


def create_body(**overrides):
    body = {"slug": "add-two", "title": "Add two numbers", "tags": ["arithmetic"], "version": content_data()}
    body.update(overrides)
    return body


def test_a_curator_creates_a_task_with_version_one(curator, api_as):
    response = api_as(curator, WRITE).post("/api/v1/tasks/", create_body(), format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["slug"] == "add-two" and body["state"] == "draft" and body["tags"] == ["arithmetic"]
    assert body["latest_version"]["number"] == 1
    assert len(body["latest_version"]["content_hash"]) == 64


def test_the_task_list_filters_searches_and_paginates(curator, api_as):
    for i in range(3):
        make_task(owner=curator, slug=f"add-{i}", title=f"Adder {i}", tags=["arithmetic"])
    make_task(
        owner=curator,
        slug="reverse",
        title="Reverse words",
        tags=["strings"],
        statement="Reverse the order of words in a sentence.",
    )
    client = api_as(curator, ["read"])
    assert client.get("/api/v1/tasks/").json()["count"] == 4
    assert [t["slug"] for t in client.get("/api/v1/tasks/?tag=strings").json()["results"]] == ["reverse"]
    assert [t["slug"] for t in client.get("/api/v1/tasks/?q=sentence").json()["results"]] == ["reverse"]
    page = client.get("/api/v1/tasks/?sort=slug&page_size=2&page=2").json()
    assert [t["slug"] for t in page["results"]] == ["add-2", "reverse"]


def test_a_new_version_is_created_and_unchanged_content_is_not(curator, api_as):
    make_task(owner=curator)
    client = api_as(curator, WRITE)
    changed = client.post(
        "/api/v1/tasks/add-two/versions/",
        {"version": content_data(statement="New words."), "changelog": "Reword", "base_number": 1},
        format="json",
    )
    assert changed.status_code == 201 and changed.json()["version"]["number"] == 2
    same = client.post(
        "/api/v1/tasks/add-two/versions/", {"version": content_data(statement="New words.")}, format="json"
    )
    assert same.status_code == 200 and same.json() == {**same.json(), "created": False}
    assert TaskVersion.objects.filter(task__slug="add-two").count() == 2


def test_versions_are_read_only_over_the_api(curator, api_as):
    make_task(owner=curator)
    client = api_as(curator, WRITE)
    for method in ("put", "patch", "delete"):
        response = getattr(client, method)("/api/v1/tasks/add-two/versions/1/", {"statement": "x"}, format="json")
        assert response.status_code == 405
        assert response.json()["error"]["code"] == "method_not_allowed"
    assert TaskVersion.objects.get().statement == "Return the sum of `a` and `b`."


def test_a_stale_edit_is_a_conflict(curator, api_as):
    make_task(owner=curator)
    client = api_as(curator, WRITE)
    client.post("/api/v1/tasks/add-two/versions/", {"version": content_data(statement="B")}, format="json")
    response = client.post(
        "/api/v1/tasks/add-two/versions/", {"version": content_data(statement="C"), "base_number": 1}, format="json"
    )
    assert response.status_code == 409
    assert response.json()["error"]["details"] == {"base_number": 1, "latest_number": 2}


def test_adding_a_solution_makes_the_next_version(curator, api_as):
    make_task(owner=curator)
    response = api_as(curator, WRITE).post(
        "/api/v1/tasks/add-two/versions/1/solutions/",
        {"role": "adversarial", "label": "subtracts", "code": "def add(a, b):\n    return a - b\n"},
        format="json",
    )
    assert response.status_code == 201
    labels = sorted(s["label"] for s in response.json()["version"]["solutions"])
    assert response.json()["version"]["number"] == 2 and labels == ["off-by-one", "ref", "subtracts"]
    assert TaskVersion.objects.get(number=1).solutions.count() == 2


def test_the_diff_endpoint_names_the_changed_sections(curator, api_as):
    make_task(owner=curator)
    client = api_as(curator, WRITE)
    client.post(
        "/api/v1/tasks/add-two/versions/",
        {"version": content_data(statement="Sum a and b.", time_limit_s=2)},
        format="json",
    )
    body = client.get("/api/v1/tasks/add-two/diff/?left=1&right=2").json()
    assert body["changed_sections"] == ["statement", "limits"]
    statement = next(x for x in body["sections"] if x["key"] == "statement")
    assert {
        "kind": "replace",
        "left_no": 1,
        "left": "Return the sum of `a` and `b`.",
        "right_no": 1,
        "right": "Sum a and b.",
    } in statement["rows"]
    assert client.get("/api/v1/tasks/add-two/diff/").json()["left"]["number"] == 1


def test_the_lifecycle_runs_through_the_api_with_four_eyes(curator, reviewer, api_as):
    task = make_task(owner=curator)
    curator_client = api_as(curator, WRITE)
    assert (
        curator_client.post("/api/v1/tasks/add-two/transitions/", {"to_state": "submitted"}, format="json").status_code
        == 201
    )
    task_transition(actor=None, task=task, to_state=State.VERIFIED)
    # The author holds no reviewer role and no review scope: refused either way.
    refused = curator_client.post("/api/v1/tasks/add-two/transitions/", {"to_state": "approved"}, format="json")
    assert refused.status_code == 403
    approved = api_as(reviewer, ["read", "review"]).post(
        "/api/v1/tasks/add-two/transitions/", {"to_state": "approved", "note": "Good"}, format="json"
    )
    assert approved.status_code == 201 and approved.json()["actor"] == "rita"
    task.refresh_from_db()
    assert task.state == State.APPROVED and task.approved_version.number == 1
    trail = curator_client.get("/api/v1/tasks/add-two/transitions/").json()["results"]
    assert [t["to_state"] for t in trail] == ["approved", "verified", "submitted", "draft"]


def test_a_reviewer_cannot_approve_what_they_authored_over_the_api(curator_reviewer, api_as):
    task = make_task(owner=curator_reviewer)
    task_submit(actor=curator_reviewer, task=task)
    task_transition(actor=None, task=task, to_state=State.FLAGGED)
    response = api_as(curator_reviewer, ["read", "review"]).post(
        "/api/v1/tasks/add-two/transitions/", {"to_state": "approved"}, format="json"
    )
    assert response.status_code == 403 and response.json()["error"]["code"] == "four_eyes"
    assert Task.objects.get().state == State.FLAGGED


def test_a_transition_not_allowed_from_the_current_state_is_a_409(curator, api_as):
    make_task(owner=curator)
    response = api_as(curator, WRITE).post(
        "/api/v1/tasks/add-two/transitions/", {"to_state": "approved"}, format="json"
    )
    # A curator lacks the review scope here; with it, the state machine answers 409.
    assert response.status_code == 403
    response = api_as(curator, ["read", "write", "review"]).post(
        "/api/v1/tasks/add-two/transitions/", {"to_state": "approved"}, format="json"
    )
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "invalid_transition" and error["details"]["allowed"] == ["submitted", "retired"]
    assert Transition.objects.count() == 1


def test_the_review_queue_lists_flagged_before_verified(curator, reviewer, api_as):
    for slug, state in (("a-verified", State.VERIFIED), ("b-flagged", State.FLAGGED), ("c-draft", None)):
        task = make_task(owner=curator, slug=slug)
        if state:
            task_submit(actor=curator, task=task)
            task_transition(actor=None, task=task, to_state=state)
    body = api_as(reviewer, ["read"]).get("/api/v1/review-queue/").json()
    assert [t["slug"] for t in body["results"]] == ["b-flagged", "a-verified"]


def test_patching_title_and_tags_does_not_make_a_version(curator, api_as):
    make_task(owner=curator)
    response = api_as(curator, WRITE).patch(
        "/api/v1/tasks/add-two/", {"title": "Sum", "tags": ["Math", "easy"]}, format="json"
    )
    assert response.status_code == 200
    assert response.json()["title"] == "Sum" and response.json()["tags"] == ["easy", "math"]
    assert TaskVersion.objects.count() == 1


def test_me_reports_roles_and_token_scopes(reviewer, api_as):
    assert api_as(reviewer, ["read"]).get("/api/v1/me/").json() == {
        "username": "rita",
        "roles": ["reviewer"],
        "scopes": ["read"],
    }


def test_a_function_task_is_created_and_read_back_with_its_signature(curator, api_as):
    signature = {"params": [{"name": "s", "type": "str"}], "returns": "int"}
    version = content_data(
        suite_kind="function_calls", language="rust", entry_point="count", starter_code="", signature=signature,
        visible_tests=[{"args": ["ab"], "expected": 2}], hidden_tests=[{"args": [""], "expected": 0}],
        solutions=[{"role": "reference", "label": "ref", "code": "fn count(s: String) -> i64 { s.len() as i64 }\n"}],
    )  # fmt: skip
    client = api_as(curator, WRITE)
    response = client.post("/api/v1/tasks/", create_body(slug="count", version=version), format="json")
    assert response.status_code == 201, response.json()
    read = client.get("/api/v1/tasks/count/versions/1/").json()
    assert read["signature"] == signature and read["suite_kind"] == "function_calls"
    bad = {**version, "signature": {"params": [{"name": "s", "type": "str"}], "returns": "char"}}
    response = client.post("/api/v1/tasks/", create_body(slug="count-bad", version=bad), format="json")
    assert response.status_code == 400
    assert "version.signature.returns" in response.json()["error"]["details"], response.json()
