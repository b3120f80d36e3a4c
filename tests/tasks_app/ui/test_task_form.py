from __future__ import annotations

from django.urls import reverse

from tasks_app.content import VersionContent
from tasks_app.models import Task, TaskVersion
from tasks_app.services import task_version_create
from tests.factories import content_data, make_task
from tests.tasks_app.ui.conftest import form_data
from tests.tasks_app.ui.test_detail_and_markdown import text_of

CREATE = reverse("ui:task-create")


def edit_url(slug: str = "add-two") -> str:
    return reverse("ui:task-edit", args=[slug])


def test_creating_with_valid_data_makes_v1_and_redirects_to_the_task(client_for, curator):
    response = client_for(curator).post(CREATE, form_data())
    assert response.status_code == 302
    assert response["Location"] == reverse("ui:task-detail", args=["add-two"])
    task = Task.objects.get(slug="add-two")
    version = task.latest_version
    assert version.number == 1 and version.changelog == "First draft."
    assert version.hidden_tests == ["assert add(-1, 1) == 0", "assert add(10, 5) == 15"]
    assert sorted(s.label for s in version.solutions.all()) == ["off-by-one", "ref"]  # the blank row is ignored
    assert sorted(t.name for t in task.tags.all()) == ["arithmetic", "basics"]
    assert (version.time_limit_s, version.memory_limit_mb) == (5.0, 128)


def test_a_reference_with_a_syntax_error_is_shown_next_to_its_code_field(client_for, curator):
    data = form_data(**{"solutions-1-role": "reference", "solutions-1-code": "def add(a, b):\n    return a +\n"})
    response = client_for(curator).post(CREATE, data)
    assert response.status_code == 400
    assert not Task.objects.exists()
    row = response.context["editor"].rows[1]
    assert any("line 2" in message for message in row.errors["code"])
    html = response.content.decode()
    error_block = html.split('id="id_solutions-1-code-errors"')[1].split("</ul>")[0]
    assert "line 2" in error_block
    assert 'aria-describedby="id_solutions-1-code-errors"' in html
    assert 'id="error-summary"' in html and 'href="#id_solutions-1-code"' in html


def test_errors_of_several_fields_are_shown_together(client_for, curator):
    data = form_data(
        slug="Not A Slug", statement="", hidden_tests="assert add(1, 1) == 2\nx = 1\n", time_limit_s="soon"
    )
    response = client_for(curator).post(CREATE, data)
    assert response.status_code == 400
    form = response.context["form"]
    assert "lowercase letters" in form.errors["slug"][0]
    assert form.errors["statement"] == ["This field may not be blank."]
    assert form.errors["hidden_tests"] == ["Line 2: Each test must be exactly one `assert` statement."]
    assert form.errors["time_limit_s"] == ["Enter a number of seconds, e.g. 10 or 2.5."]


def test_a_stdio_json_error_names_its_line(client_for, curator):
    data = form_data(
        suite_kind="stdio",
        entry_point="",
        visible_tests="",
        hidden_tests='[\n  {"input": "1 2\\n", "output": "3\\n"},\n  {"input": }\n]',
        **{"solutions-0-code": "print(sum(map(int, input().split())))\n"},
    )
    response = client_for(curator).post(CREATE, data)
    assert response.status_code == 400
    [message] = response.context["form"].errors["hidden_tests"]
    assert message.startswith("Invalid JSON at line 3, column 13")


def test_a_stdio_task_with_valid_cases_is_created(client_for, curator):
    data = form_data(
        suite_kind="stdio",
        entry_point="",
        visible_tests="",
        hidden_tests='[{"input": "1 2\\n", "output": "3\\n"}, {"input": "", "output": "0\\n"}]',
        **{"solutions-0-code": "print(sum(map(int, input().split())))\n", "solutions-1-code": "print(0)\n"},
    )
    response = client_for(curator).post(CREATE, data)
    assert response.status_code == 302, response.context["editor"].summary()
    assert Task.objects.get().latest_version.hidden_tests[0] == {"input": "1 2\n", "output": "3\n"}


def test_a_missing_stdio_field_points_at_the_case(client_for, curator):
    data = form_data(suite_kind="stdio", entry_point="", visible_tests="", hidden_tests='[{"input": "1"}]')
    response = client_for(curator).post(CREATE, data)
    assert "Case 1, output: This field is required." in response.context["form"].errors["hidden_tests"]


def test_a_taken_slug_is_a_409_next_to_the_slug(client_for, curator):
    make_task(owner=curator)
    response = client_for(curator).post(CREATE, form_data())
    assert response.status_code == 409
    assert response.context["form"].errors["slug"] == ["Already taken."]


def test_only_curators_may_open_the_create_form(client_for, reviewer):
    response = client_for(reviewer).get(CREATE)
    assert response.status_code == 403
    assert "Only curators" in response.content.decode()


def test_add_another_solution_returns_one_empty_row_and_the_next_button(client_for, curator):
    response = client_for(curator).get(reverse("ui:solution-row"), {"index": 3}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'name="solutions-3-code"' in html and "<legend>Solution 4</legend>" in html
    assert 'hx-swap-oob="true"' in html and "index=4" in html
    assert client_for(curator).get(reverse("ui:solution-row"), {"index": "x"}).status_code == 400


def test_without_javascript_add_another_solution_rerenders_with_one_more_row(client_for, curator):
    response = client_for(curator).post(CREATE, form_data(add_solution="1"))
    assert response.status_code == 200
    assert [row.prefix for row in response.context["editor"].rows][-1] == "solutions-3"
    assert not Task.objects.exists()


def test_the_edit_form_is_prefilled_from_the_latest_version(client_for, curator):
    make_task(owner=curator)
    response = client_for(curator).get(edit_url())
    assert response.status_code == 200
    form = response.context["form"]
    assert form.initial["hidden_tests"] == "assert add(-1, 1) == 0\nassert add(10, 5) == 15"
    assert form.initial["base_number"] == 1 and form.initial["title"] == "Add two numbers"
    assert 'name="base_number" value="1"' in response.content.decode()


def test_editing_makes_v2_with_the_changelog(client_for, curator):
    make_task(owner=curator)
    data = form_data(
        statement="Add `a` and `b` and return the result.",
        changelog="Clearer wording.",
        base_number="1",
        title="Add two integers",
        tags="arithmetic",
    )
    data.pop("slug")
    response = client_for(curator).post(edit_url(), data, follow=True)
    assert response.redirect_chain[-1][0] == reverse("ui:task-detail", args=["add-two"])
    task = Task.objects.get(slug="add-two")
    assert task.latest_version.number == 2 and task.latest_version.changelog == "Clearer wording."
    assert task.title == "Add two integers"
    assert "Saved v2." in response.content.decode()


def _unchanged_post(client, slug: str = "add-two") -> dict[str, str]:
    """What a browser posts back when the curator saves the edit form untouched."""
    form = client.get(edit_url(slug)).context["editor"]
    data = {}
    for bound in [*form.form, *(field for row in form.rows for field in row)]:
        value = bound.value()
        data[bound.html_name] = "" if value is None else str(value)
    return data


def test_saving_the_edit_form_untouched_makes_no_version(client_for, curator):
    make_task(owner=curator)
    client = client_for(curator)
    response = client.post(edit_url(), _unchanged_post(client), follow=True)
    assert TaskVersion.objects.filter(task__slug="add-two").count() == 1
    assert "No changes: still v1." in response.content.decode()


def test_an_untouched_stdio_and_module_task_round_trips_without_a_version(client_for, curator):
    make_task(
        owner=curator,
        slug="sum-io",
        entry_point="",
        suite_kind="stdio",
        visible_tests=[],
        hidden_tests=[{"input": "1 2\n", "output": "3\n"}, {"input": "ü\n", "output": ""}],
        solutions=[{"role": "reference", "label": "ref", "code": "print(3)\n"}],
        time_limit_s=2.75,
    )
    make_task(
        owner=curator,
        slug="checked",
        suite_kind="check_function",
        visible_tests=[],
        hidden_tests=[
            "def check(candidate):\n    assert candidate(1, 2) == 3\n",
            "def check(candidate):\n    assert candidate(0, 0) == 0\n",
        ],
    )
    client = client_for(curator)
    for slug in ("sum-io", "checked"):
        response = client.post(edit_url(slug), _unchanged_post(client, slug), follow=True)
        assert "No changes: still v1." in response.content.decode(), slug
    assert TaskVersion.objects.count() == 2


def test_a_stale_base_number_gives_409_with_the_conflict_message(client_for, curator, other_curator):
    task = make_task(owner=curator)
    client = client_for(curator)
    stale = _unchanged_post(client)
    task_version_create(actor=other_curator, task=task, content=VersionContent.parse(content_data(statement="B")))
    stale["statement"] = "My own rewording."
    response = client.post(edit_url(), stale)
    assert response.status_code == 409
    html = response.content.decode()
    assert "changed since you opened it: you edited v1, the newest is v2" in html
    assert reverse("ui:version-diff", args=["add-two"]) + "?left=1&amp;right=2" in html
    assert "My own rewording." in html  # the editor's work is still in the form
    assert task.versions.count() == 2


def test_editing_a_retired_task_is_a_409_banner(client_for, curator):
    from tasks_app.services import task_retire

    task = make_task(owner=curator)
    task_retire(actor=curator, task=task)
    client = client_for(curator)
    data = _unchanged_post(client)
    data["statement"] = "Changed."
    response = client.post(edit_url(), data)
    assert response.status_code == 409
    assert "restore it before editing" in response.content.decode()


def test_a_solution_without_a_label_is_flagged_on_its_row(client_for, curator):
    response = client_for(curator).post(CREATE, form_data(**{"solutions-1-label": ""}))
    assert response.status_code == 400
    editor = response.context["editor"]
    assert editor.rows[1].errors["label"] == ["This field may not be blank."]
    assert editor.banner == []


CHECKER = "import sys\nsys.exit(0 if open(sys.argv[2]).read().split() else 2)\n"


def test_a_stdio_task_with_a_checker_is_created_shown_and_diffed(client_for, curator):
    client = client_for(curator)
    data = form_data(
        suite_kind="stdio", entry_point="", visible_tests="", comparator_mode="checker",
        checker_language="python", checker_source=CHECKER,
        hidden_tests='[{"input": "1 2\\n", "output": "3\\n"}, {"input": "", "output": "0\\n"}]',
        **{"solutions-0-code": "print(sum(map(int, input().split() or [0])))\n", "solutions-1-code": "print()\n"},
    )  # fmt: skip
    response = client.post(CREATE, data)
    assert response.status_code == 302, response.context["editor"].summary()
    version = Task.objects.get().latest_version
    assert version.comparator == {"mode": "checker", "language": "python", "source": CHECKER}
    page = client.get(reverse("ui:task-detail", args=["add-two"])).content.decode()
    assert "Checker" in page and "checker INPUT OUTPUT ANSWER" in page and "sys.argv[2]" in text_of(page)
    form = client.get(edit_url()).context["form"]
    assert (form.initial["checker_language"], form.initial["checker_source"]) == ("python", CHECKER)
    changed = {**data, "checker_source": CHECKER.replace("else 2", "else 1"), "changelog": "Stricter.",
               "base_number": "1"}  # fmt: skip
    assert client.post(edit_url(), changed).status_code == 302
    diff = client.get(reverse("ui:version-diff", args=["add-two"]) + "?left=1&right=2").content.decode()
    assert "Checker" in diff and "else 1" in diff


def test_a_checker_without_source_is_flagged_next_to_the_checker_field(client_for, curator):
    data = form_data(suite_kind="stdio", entry_point="", visible_tests="", comparator_mode="checker",
                     checker_language="python", checker_source="  ",
                     hidden_tests='[{"input": "1 2\\n", "output": "3\\n"}]')  # fmt: skip
    response = client_for(curator).post(CREATE, data)
    assert response.status_code == 400 and not Task.objects.exists()
    assert any("needs its source" in m for m in response.context["form"].errors["checker_source"])


INTERACTOR = "import sys\nprint(1, flush=True)\nsys.exit(0 if input() == '! 1' else 1)\n"


def test_an_interactive_task_is_created_shown_and_diffed(client_for, curator):
    client = client_for(curator)
    data = form_data(
        suite_kind="stdio", entry_point="", visible_tests="", comparator_mode="interactor",
        checker_language="python", checker_source=INTERACTOR,
        hidden_tests='[{"input": "1 1\\n", "output": "1\\n"}]',
        **{"solutions-0-code": "input()\nprint('! 1', flush=True)\n", "solutions-1-code": "print('! 2')\n"},
    )  # fmt: skip
    response = client.post(CREATE, data)
    assert response.status_code == 302, response.context["editor"].summary()
    version = Task.objects.get().latest_version
    assert version.comparator == {"mode": "interactor", "language": "python", "source": INTERACTOR}
    page = client.get(reverse("ui:task-detail", args=["add-two"])).content.decode()
    assert "Interactor" in page and "interactor INPUT OUTPUT ANSWER" in page and "! 1" in text_of(page)
    changed = {**data, "checker_source": INTERACTOR.replace("! 1", "! 2"), "changelog": "Other.", "base_number": "1"}
    assert client.post(edit_url(), changed).status_code == 302
    diff = client.get(reverse("ui:version-diff", args=["add-two"]) + "?left=1&right=2").content.decode()
    assert "Interactor" in diff
    refused = client.post(CREATE, {**data, "slug": "other", "checker_source": " "})
    assert refused.status_code == 400
    assert any("interactor needs its source" in m for m in refused.context["form"].errors["checker_source"])


GENERATOR = "import sys\nprint(int(sys.argv[1]) % 7, 1)\n"


def test_a_stdio_task_with_a_generator_and_validator_is_created_shown_and_diffed(client_for, curator):
    client = client_for(curator)
    data = form_data(
        suite_kind="stdio", entry_point="", visible_tests="", generator_language="python",
        generator_source=GENERATOR, generator_count="12", validator_language="python",
        validator_source="import sys\nsys.exit(0)\n",
        hidden_tests='[{"input": "1 2\\n", "output": "3\\n"}]',
        **{"solutions-0-code": "print(sum(map(int, input().split())))\n", "solutions-1-code": "print(0)\n"},
    )  # fmt: skip
    response = client.post(CREATE, data)
    assert response.status_code == 302, response.context["editor"].summary()
    version = Task.objects.get().latest_version
    assert version.test_generator == {
        "language": "python",
        "source": GENERATOR,
        "count": 12,
        "validator": {"language": "python", "source": "import sys\nsys.exit(0)\n"},
    }
    page = client.get(reverse("ui:task-detail", args=["add-two"])).content.decode()
    assert "Test generator" in page and "12 inputs" in page and "Input validator" in page
    form = client.get(edit_url()).context["form"]
    assert (form.initial["generator_source"], form.initial["generator_count"]) == (GENERATOR, "12")
    changed = {**data, "generator_count": "30", "changelog": "More inputs.", "base_number": "1"}
    assert client.post(edit_url(), changed).status_code == 302
    diff = client.get(reverse("ui:version-diff", args=["add-two"]) + "?left=1&right=2").content.decode()
    assert "Test generator" in diff and "30" in diff
    refused = client.post(CREATE, {**data, "slug": "other", "generator_count": "500"})
    assert refused.status_code == 400
    assert any("from 1 to 200" in m for m in refused.context["form"].errors["generator_count"])
    assignments = form_data(generator_source=GENERATOR, slug="third")  # an assertions task has no generator
    refused = client.post(CREATE, assignments)
    assert refused.status_code == 400
    assert any("Only stdio tasks" in m for m in refused.context["form"].errors["generator_source"])


GO_TOP_K = (
    'package main\n\nimport "sort"\n\nfunc top_k(xs []int, k int) []int {\n'
    "\tsort.Sort(sort.Reverse(sort.IntSlice(xs)))\n\treturn xs[:k]\n}\n"
)


def test_a_function_task_is_created_with_its_one_line_signature_shown_and_diffed(client_for, curator):
    client = client_for(curator)
    data = form_data(
        suite_kind="function_calls", language="go", entry_point="top_k", starter_code="",
        signature="(xs: list[int], k: int) -> list[int]",
        visible_tests='[{"args": [[5, 4, 1], 2], "expected": [5, 4]}]',
        hidden_tests='[{"args": [[1, 9, 3], 1], "expected": [9]}]',
        **{"solutions-0-code": GO_TOP_K, "solutions-1-code": "package main\nfunc top_k(xs []int, k int) []int "
                                                             "{ return xs[:k] }\n"},
    )  # fmt: skip
    response = client.post(CREATE, data)
    assert response.status_code == 302, response.context["editor"].summary()
    version = Task.objects.get().latest_version
    assert version.signature == {"params": [{"name": "xs", "type": "list[int]"}, {"name": "k", "type": "int"}],
                                 "returns": "list[int]"}  # fmt: skip
    page = text_of(client.get(reverse("ui:task-detail", args=["add-two"])).content.decode())
    assert "top_k(xs: list[int], k: int) -> list[int]" in page and "top_k([5, 4, 1], 2) → [5, 4]" in page
    form = client.get(edit_url()).context["form"]
    assert form.initial["signature"] == "(xs: list[int], k: int) -> list[int]"
    # An untouched save is no new version; a changed expected value is one line of the diff.
    assert client.post(edit_url(), {**data, "base_number": "1", "changelog": "Same."}).status_code in (200, 302)
    assert TaskVersion.objects.count() == 1
    changed = {**data, "hidden_tests": '[{"args": [[1, 9, 3], 2], "expected": [9, 3]}]', "changelog": "Two.",
               "base_number": "1"}  # fmt: skip
    assert client.post(edit_url(), changed).status_code == 302
    diff = client.get(reverse("ui:version-diff", args=["add-two"]) + "?left=1&right=2").content.decode()
    assert "[9, 3]" in diff and "Signature" in diff


def test_a_bad_signature_or_call_is_shown_next_to_its_field(client_for, curator):
    data = form_data(suite_kind="function_calls", language="go", entry_point="top_k", signature="xs: list[int]",
                     hidden_tests='[{"args": [[1]], "expected": 1}]')  # fmt: skip
    response = client_for(curator).post(CREATE, data)
    assert response.status_code == 400 and not Task.objects.exists()
    assert any("(name: type, ...) -> type" in m for m in response.context["form"].errors["signature"])
    data["signature"] = "(xs: list[int]) -> dict"
    response = client_for(curator).post(CREATE, data)
    assert any("not a type" in m for m in response.context["form"].errors["signature"]), response.context["form"].errors
