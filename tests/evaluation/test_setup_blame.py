"""Whose fault a suite's setup that raises is: the candidate's (every test fails), or the
task's when its reference fails the same way (BROKEN_SETUP, never retried as
infrastructure). And setup that builds the candidate's own objects works, with the
verdict still decided in the judge."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evaluation.models import VerificationState
from evaluation.sandbox import engine
from evaluation.sandbox.harness_files import FILES
from evaluation.sandbox.types import Limits, RunRequest, Status
from evaluation.verification.config import VerifyConfig
from evaluation.verification.inline import verification_run_inline
from tasks_app.models import State
from tasks_app.services import task_submit
from tests.factories import make_task

from .conftest import needs_bwrap

LIMITS = Limits(wall_s=3, cpu_s=3, memory_mb=256)

TREE = """class Node:
    def __init__(self, val, left=None, right=None):
        self.val = val
        self.left = left
        self.right = right


def max_depth(root):
    if root is None:
        return 0
    return 1 + max(max_depth(root.left), max_depth(root.right))


def mirror(root):
    if root is not None:
        root.left, root.right = mirror(root.right), mirror(root.left)
    return root
"""
# Built both ways public data builds trees: attribute by attribute, and by constructor.
TREE_SETUP = """root = Node(1)
root.left = Node(2)
root.right = Node(3)
root.left.left = Node(4)
nodes = [Node(i) for i in range(5)]
for parent, child in zip(nodes, nodes[1:]):
    parent.left = child
chain = nodes[0]
balanced = Node(1, Node(2, Node(4), Node(5)), Node(3))


def values(node):
    return [] if node is None else values(node.left) + [node.val] + values(node.right)
"""
TREE_TESTS = [
    "assert max_depth(root) == 3",
    "assert max_depth(chain) == 5",
    "assert max_depth(balanced) == 3 and max_depth(None) == 0",
    "assert values(mirror(Node(1, Node(2), Node(3)))) == [3, 1, 2]",
    "tree = Node(1, Node(2))\nassert mirror(tree) is tree and tree.right.val == 2",
]


def run(request: RunRequest):
    return engine.run(request, backend="bwrap", warm=True)


def tree_request(solution: str, *, setup: str = TREE_SETUP, tests: list[str] = TREE_TESTS) -> RunRequest:
    return RunRequest(suite_kind="assertions", solution=solution, tests={"setup": setup, "hidden": tests},
                      entry_point="max_depth", limits=LIMITS)  # fmt: skip


def explain(result) -> tuple:
    return result.status, result.message[-800:], [(t.name, t.outcome, t.message[-800:]) for t in result.tests]


@needs_bwrap
def test_setup_that_builds_the_candidates_nodes_passes_a_correct_tree():
    result = run(tree_request(TREE))
    assert result.status == Status.PASSED, explain(result)
    assert result.setup_error == ""


@needs_bwrap
@pytest.mark.parametrize(
    "wrong",
    [
        TREE.replace("1 + max(", "1 + min("),
        TREE.replace("mirror(root.right), mirror(root.left)", "root.left, root.right"),
    ],
)
def test_setup_that_builds_the_candidates_nodes_fails_a_wrong_tree(wrong):
    result = run(tree_request(wrong))
    assert result.status == Status.FAILED, explain(result)
    assert result.setup_error == "" and any(t.outcome == "failed" for t in result.tests)


@needs_bwrap
def test_a_check_function_can_build_the_candidates_objects_and_pass_them_back():
    check = (
        "def check(candidate):\n    root = Node(1)\n    root.left = Node(2)\n    assert candidate(root) == 2\n"
        "    root.left.right = Node(3)\n    assert candidate(root) == 3\n    del root.left.right\n"
    )
    solution = TREE.replace("        self.right = right\n", "        self.right = right\n\n    right = None\n")
    request = RunRequest(suite_kind="check_function", solution=solution, tests={"hidden": [check]},
                         entry_point="max_depth", limits=LIMITS)  # fmt: skip
    result = run(request)
    assert result.status == Status.PASSED, explain(result)


@needs_bwrap
@pytest.mark.parametrize(
    ("solution", "outcome", "says"),
    [
        # The candidate's call raised in the setup.
        (TREE.replace("        self.val = val\n", "        raise ValueError('no nodes today')\n"), "failed",
         "ValueError: Node raised ValueError: no nodes today"),
        # The candidate lacks a name the setup uses.
        (TREE.replace("class Node:", "class Knot:"), "error", "NameError: name 'Node' is not defined"),
        # Its process died while the setup ran.
        (TREE.replace("        self.val = val\n", "        import os\n        os._exit(3)\n"), "failed",
         "exited (code 3)"),
    ],
)  # fmt: skip
def test_setup_that_raises_because_of_the_candidate_fails_every_test_with_its_traceback(solution, outcome, says):
    result = run(tree_request(solution))
    assert result.status == Status.FAILED, explain(result)
    assert result.attempts == 1 and result.anomaly is None  # the candidate's failure, not the sandbox's
    assert len(result.tests) == len(TREE_TESTS)
    assert {t.outcome for t in result.tests} == {outcome}
    assert all(t.message.startswith("the test setup failed:\nTraceback") and says in t.message for t in result.tests)
    assert 'File "<test setup>", line 1' in result.setup_error and "root = Node(1)" in result.setup_error
    assert not any(name in result.setup_error for name in FILES)  # the harness's own frames are left out


@needs_bwrap
def test_setup_that_runs_out_of_time_is_a_timeout_not_a_sandbox_error():
    slow = TREE.replace("        self.val = val\n", "        while True:\n            pass\n")
    result = run(tree_request(slow))
    assert result.status == Status.TIMEOUT, explain(result)
    assert result.setup_error == ""


# -- the verification pipeline ----------------------------------------------------------------


def _tree_task(owner, *, setup: str, slug: str):
    task = make_task(
        owner=owner,
        slug=slug,
        title="Tree depth",
        entry_point="max_depth",
        statement="Return the depth of a binary tree of Node objects.",
        starter_code="class Node:\n    ...\n\n\ndef max_depth(root):\n    ...\n",
        test_setup=setup,
        visible_tests=TREE_TESTS[:1],
        hidden_tests=TREE_TESTS[1:3],
        solutions=[{"role": "reference", "label": "ref", "code": TREE}],
        time_limit_s=2,
    )
    task_submit(actor=owner, task=task)
    task.refresh_from_db()
    return task


NO_PROBES = VerifyConfig(repeats=2, mutants=0, probes=False, backend="bwrap")


@needs_bwrap
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_reference_whose_setup_raises_is_flagged_broken_setup_and_never_retried(curator, client):
    broken = TREE_SETUP.replace("root = Node(1)", "root = Node(1)\nroot.left = Leaf(2)")  # Leaf: defined nowhere
    task = _tree_task(curator, setup=broken, slug="broken-setup")
    verification = verification_run_inline(version=task.latest_version, config=NO_PROBES)

    assert verification.state == VerificationState.DONE and verification.verdict == "flagged"
    task.refresh_from_db()
    assert task.state == State.FLAGGED
    flag = verification.flags.get(code="BROKEN_SETUP")
    assert flag.severity == "error" and "NameError: name 'Leaf' is not defined" in flag.message
    assert (
        'File "<test setup>", line 2' in flag.details["traceback"]
        and "root.left = Leaf(2)" in flag.details["traceback"]
    )
    assert flag.details["runs"] == flag.details["reference_runs"] == 2
    # The task's fault: judged once, retried nowhere (the explore run only reports what it found).
    for execution in verification.executions.exclude(role="explore"):
        assert execution.status == "failed" and execution.attempts == 1 and execution.result["attempts"] == 1
    client.force_login(curator)
    page = client.get(reverse("verification:report", args=[task.slug, 1])).content.decode()
    assert "BROKEN_SETUP" in page and "root.left = Leaf(2)" in page and "<pre" in page


@needs_bwrap
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_task_whose_setup_builds_the_references_nodes_is_verified(curator):
    task = _tree_task(curator, setup=TREE_SETUP, slug="tree-setup")
    verification = verification_run_inline(version=task.latest_version, config=NO_PROBES)
    assert verification.state == VerificationState.DONE
    assert not verification.flags.filter(code__in=["BROKEN_SETUP", "REFERENCE_FAILS"]).exists()
    assert set(verification.executions.values_list("status", flat=True)) == {"passed"}
