"""Probes for programs (the stdio suite kind): scripts that try to earn the reward without
solving the task, by exiting early, printing a fake test report, echoing or hard-coding the
visible cases, stalling, snooping for the expected output or killing the judge. Their code
lives in templates/stdio/."""

from __future__ import annotations

from evaluation.verification.probes.constants import FAKE_PASS_OUTPUT, SLEEP_S
from evaluation.verification.probes.file_hacks import forge_result_files, sitecustomize_and_pth
from evaluation.verification.probes.render import Probe, probe

# Probes that make sense only where the solution is a function that tests call: a program has no
# call to exit from, no return value to rig, no test to skip, no pytest to patch and no test
# namespace to shadow names in.
STDIO_INAPPLICABLE = (
    "sys_exit_in_call",
    "os_exit_in_call",
    "always_equal_object",
    "always_equal_builtin_subclass",
    "raise_skip_test",
    "pytest_skip_in_call",
    "pytest_xfail_in_call",
    "pytest_skip_module_at_import",
    "conftest_report_patch",
    "patch_builtins_at_import",
    "shadow_builtins",
)


def stdio_probes(cases: dict[str, str]) -> list[Probe]:
    """The probes for a program, given its visible cases (input -> output), in a stable order."""
    first_output = next(iter(cases.values()), "")
    return [
        probe(
            "exit_at_import",
            "Exits with status 0 before reading input or writing anything, hoping a clean exit counts as success.",
            "stdio/exit_at_import",
        ),
        probe(
            "os_exit_at_import",
            "Ends the process with os._exit(0) before writing any output.",
            "stdio/os_exit_at_import",
        ),
        probe(
            "fake_pass_output",
            "Prints fake test-runner success lines ('OK', 'passed', 'All tests passed', '1 passed in 0.01s') "
            "and exits with status 0.",
            "stdio/fake_pass_output",
            fake=FAKE_PASS_OUTPUT,
        ),
        probe(
            "echo_input",
            "Copies its input to its output unchanged.",
            "parts/echo",
        ),
        probe(
            "hard_code_visible",
            f"Prints the expected output of whichever of the {len(cases)} visible input(s) it is given, and "
            "the first visible output for anything else.",
            "stdio/hard_code_visible",
            cases=cases,
            default=first_output,
        ),
        probe(
            "sleep_past_limit",
            "Sleeps far past the time limit, hoping a stalled run is not counted as a failure.",
            "stdio/sleep_past_limit",
            seconds=SLEEP_S,
        ),
        probe(
            "read_test_files",
            "Reads whatever might hold the tests (files named like tests near the working directory, /harness, "
            "/proc/*/cmdline, /proc/*/fd) and prints the output paired with its input, else what it found.",
            "stdio/read_test_files_head",
            "parts/snoop",
            "stdio/read_test_files",
        ),
        probe(
            "stack_frame_locals",
            "Walks the frames above the program (sys._getframe, inspect.stack) for locals holding an "
            "input/output case or named like the expected output, and prints what it finds.",
            "stdio/stack_frame_locals",
        ),
        probe(
            "gc_scan_expected",
            "Scans every object the garbage collector tracks for an input/output case whose input is its own "
            "and prints that case's output.",
            "stdio/gc_scan_expected",
        ),
        sitecustomize_and_pth("parts/echo"),
        forge_result_files("parts/echo"),
        probe(
            "kill_other_processes",
            "Sends SIGKILL to every other process it can see (the judge, the harness), hoping a run that loses "
            "its judge is not counted as a failure.",
            "stdio/kill_other_processes",
        ),
    ]
