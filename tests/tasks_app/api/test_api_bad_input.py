"""Every kind of bad input gets a 4xx in the one error shape, saying what and
where, and nothing is half-written."""

from __future__ import annotations

import json

import pytest
from django.test import override_settings

from tasks_app.models import Solution, Task, TaskVersion, Transition
from tests.factories import content_data, make_task

pytestmark = pytest.mark.django_db
WRITE = ["read", "write"]


def assert_error(response, status, code=None):
    assert response.status_code == status, response.content[:500]
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}
    assert body["error"]["message"]
    if code:
        assert body["error"]["code"] == code
    return body["error"]


def assert_nothing_written():
    assert (Task.objects.count(), TaskVersion.objects.count(), Solution.objects.count()) == (0, 0, 0)


def post_task(client, body, **kwargs):
    return client.post("/api/v1/tasks/", body, format="json", **kwargs)


def base(**version_overrides):
    return {"slug": "add-two", "title": "Add", "version": content_data(**version_overrides)}


def test_malformed_json_is_a_400(curator, api_as):
    response = api_as(curator, WRITE).post("/api/v1/tasks/", b'{"slug": "x",', content_type="application/json")
    error = assert_error(response, 400, "malformed_request")
    assert "JSON" in error["message"]
    assert_nothing_written()


def test_non_utf8_bytes_are_a_400(curator, api_as):
    response = api_as(curator, WRITE).post("/api/v1/tasks/", b'{"slug": "\xff\xfe"}', content_type="application/json")
    assert_error(response, 400, "malformed_request")
    assert_nothing_written()


def test_a_json_array_instead_of_an_object_is_a_400(curator, api_as):
    assert_error(post_task(api_as(curator, WRITE), [1, 2]), 400, "invalid")


def test_wrong_types_name_the_field(curator, api_as):
    error = assert_error(post_task(api_as(curator, WRITE), base(time_limit_s="fast", hidden_tests="assert 1")), 400)
    assert "version.time_limit_s" in error["details"] and "version.hidden_tests" in error["details"]
    assert_nothing_written()


def test_unknown_fields_are_refused_at_every_level(curator, api_as):
    client = api_as(curator, WRITE)
    error = assert_error(post_task(client, {**base(), "owner": "someone"}), 400)
    assert "owner" in error["details"]
    error = assert_error(post_task(client, base(difficulty="hard")), 400)
    assert "version.difficulty" in error["details"]
    bad_solution = content_data()["solutions"] + [{"role": "adversarial", "label": "x", "code": "", "score": 1}]
    error = assert_error(post_task(client, base(solutions=bad_solution)), 400)
    assert "version.solutions[2].score" in error["details"]
    assert_nothing_written()


@override_settings(TASKS_MAX_STATEMENT_BYTES=1000, TASKS_MAX_CODE_BYTES=2000)
def test_oversized_fields_are_refused_with_the_limit(curator, api_as):
    client = api_as(curator, WRITE)
    error = assert_error(post_task(client, base(statement="x" * 1001)), 400)
    assert error["details"]["version.statement"] == ["Too long: 1001 bytes, the limit is 1000 bytes."]
    error = assert_error(post_task(client, base(starter_code="#" * 3000)), 400)
    assert "version.starter_code" in error["details"]
    assert_nothing_written()


def test_a_nul_character_is_refused_not_a_500(curator, api_as):
    error = assert_error(post_task(api_as(curator, WRITE), base(statement="bad\x00byte")), 400)
    assert "NUL" in error["details"]["version.statement"][0]
    assert_nothing_written()


def test_a_reference_with_a_syntax_error_is_a_400_with_the_line(curator, api_as):
    solutions = [{"role": "reference", "label": "ref", "code": "def add(a, b):\n    return a +\n"}]
    error = assert_error(post_task(api_as(curator, WRITE), base(solutions=solutions)), 400)
    assert error["details"]["version.solutions[0].code"][0].startswith("syntax error at line 2")
    assert_nothing_written()


def test_an_unknown_suite_kind_is_a_400_listing_the_kinds(curator, api_as):
    error = assert_error(post_task(api_as(curator, WRITE), base(suite_kind="doctest")), 400)
    assert "assertions, check_function, pytest, stdio" in error["details"]["version.suite_kind"][0]
    assert_nothing_written()


def test_a_duplicate_slug_is_a_409_and_the_first_task_is_untouched(curator, api_as):
    make_task(owner=curator)
    response = post_task(api_as(curator, WRITE), base(statement="Other"))
    assert_error(response, 409, "conflict")
    assert TaskVersion.objects.count() == 1


def test_an_invalid_slug_and_tags_are_400(curator, api_as):
    client = api_as(curator, WRITE)
    assert "slug" in assert_error(post_task(client, {**base(), "slug": "Has Spaces"}), 400)["details"]
    assert "tags" in assert_error(post_task(client, {**base(), "tags": ["ok", "no spaces"]}), 400)["details"]
    assert_nothing_written()


def test_bad_filters_are_a_400_not_an_empty_page(curator, api_as):
    error = assert_error(api_as(curator, ["read"]).get("/api/v1/tasks/?state=bogus&sort=nope"), 400)
    assert set(error["details"]) == {"state", "sort"}


def test_a_missing_task_or_version_is_a_404_in_the_error_shape(curator, api_as):
    make_task(owner=curator)
    client = api_as(curator, ["read"])
    assert_error(client.get("/api/v1/tasks/nope/"), 404, "not_found")
    assert_error(client.get("/api/v1/tasks/add-two/versions/9/"), 404, "not_found")
    assert_error(client.get("/api/v1/no-such-endpoint/"), 404, "not_found")


def test_bad_diff_parameters_are_a_400(curator, api_as):
    make_task(owner=curator)
    error = assert_error(api_as(curator, ["read"]).get("/api/v1/tasks/add-two/diff/?left=abc"), 400)
    assert "left" in error["details"]


def test_rejecting_without_a_note_is_a_400_and_writes_nothing(curator, reviewer, api_as):
    from tasks_app.services import task_submit, task_transition

    task = make_task(owner=curator)
    task_submit(actor=curator, task=task)
    task_transition(actor=None, task=task, to_state="verified")
    before = Transition.objects.count()
    response = api_as(reviewer, ["read", "review"]).post(
        "/api/v1/tasks/add-two/transitions/", {"to_state": "rejected"}, format="json"
    )
    assert_error(response, 400, "note_required")
    assert Transition.objects.count() == before


def test_an_unknown_state_is_a_400(curator, api_as):
    make_task(owner=curator)
    response = api_as(curator, WRITE).post("/api/v1/tasks/add-two/transitions/", {"to_state": "done"}, format="json")
    assert "to_state" in assert_error(response, 400)["details"]


def test_an_unsupported_media_type_is_a_415(curator, api_as):
    response = api_as(curator, WRITE).post("/api/v1/tasks/", b"slug=x", content_type="text/csv")
    assert_error(response, 415, "unsupported_media_type")


def test_deeply_nested_json_is_a_400_not_a_500(curator, api_as):
    body = ("[" * 100_000 + "]" * 100_000).encode()
    response = api_as(curator, WRITE).post("/api/v1/tasks/", body, content_type="application/json")
    assert response.status_code == 400


def test_json_text_values_are_checked_field_by_field(curator, api_as):
    body = json.dumps(base(entry_point="not an identifier", memory_limit_mb=10**9)).encode()
    error = assert_error(api_as(curator, WRITE).post("/api/v1/tasks/", body, content_type="application/json"), 400)
    assert {"version.entry_point", "version.memory_limit_mb"} <= set(error["details"])


@pytest.mark.parametrize("query", ["page=0", "page=abc", "page_size=-5", "page_size=100000", "page_size="])
def test_a_malformed_page_or_page_size_is_a_400(curator, api_as, query):
    error = assert_error(api_as(curator, ["read"]).get(f"/api/v1/tasks/?{query}"), 400)
    assert set(error["details"]) == {query.split("=")[0]}


def test_a_page_past_the_end_is_a_404(curator, api_as):
    make_task(owner=curator)
    assert_error(api_as(curator, ["read"]).get("/api/v1/tasks/?page=2"), 404, "not_found")
