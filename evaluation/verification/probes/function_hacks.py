"""Probes for function_calls tasks, in every language: each defines the task's function
with the signature its language declares (evaluation/sandbox/drivers/) and does its
hack inside it.

- `exit_in_function`: ends the process with status 0 on the first call, before the
  driver writes any result (`sys.exit(0)`'s equivalent in each language);
- `print_fake_result`: writes what the driver writes, a result line and the visible
  example's expected value, and exits before the driver can, hoping the judge reads
  the first it finds (it reads the last, and the expected value of another test is not
  the visible one's);
- `spin_forever`: a busy loop inside the call, which must end as a timeout.

Python's function tasks get the call probes too (call_hacks.py: objects equal to
anything, frame walks, SkipTest, ...): its driver checks each returned value's type,
so none of them passes there.
"""

from __future__ import annotations

from typing import Any

from evaluation.sandbox import drivers
from evaluation.sandbox.drivers.value_types import MARKER, encode_value, parse_type
from evaluation.verification.probes.language_hacks import DIALECTS
from evaluation.verification.probes.render import Probe

_RUNTIME = {
    "java": 'throw new RuntimeException("unreachable");',
    "csharp": 'throw new System.Exception("unreachable");',
}

EXIT = {
    "python": "import os\nos._exit(0)",
    "c": "exit(0);",
    "cpp": "std::exit(0);",
    "java": "System.exit(0);\n" + _RUNTIME["java"],
    "csharp": "System.Environment.Exit(0);\n" + _RUNTIME["csharp"],
    "go": 'os.Exit(0)\npanic("unreachable")',
    "rust": "std::process::exit(0)",
    "javascript": "process.exit(0);",
    "typescript": 'process.exit(0);\nthrow new Error("unreachable");',
    "ruby": "exit!(0)",
    "php": "exit(0);",
    "lua": "os.exit(0)",
}
PRINT_AND_EXIT = {
    "python": "import os, sys\nsys.stdout.write(@TEXT@)\nsys.stdout.flush()\nos._exit(0)",
    "c": "fputs(@TEXT@, stdout);\nfflush(stdout);\nexit(0);",
    "cpp": "std::fputs(@TEXT@, stdout);\nstd::fflush(stdout);\nstd::exit(0);",
    "java": "System.out.print(@TEXT@);\nSystem.out.flush();\nSystem.exit(0);\n" + _RUNTIME["java"],
    "csharp": "System.Console.Out.Write(@TEXT@);\nSystem.Console.Out.Flush();\nSystem.Environment.Exit(0);\n"
    + _RUNTIME["csharp"],
    "go": 'os.Stdout.WriteString(@TEXT@)\nos.Exit(0)\npanic("unreachable")',
    "rust": 'print!("{}", @TEXT@);\nlet _ = std::io::Write::flush(&mut std::io::stdout());\nstd::process::exit(0)',
    "javascript": "process.stdout.write(@TEXT@);\nprocess.exit(0);",
    "typescript": 'process.stdout.write(@TEXT@);\nprocess.exit(0);\nthrow new Error("unreachable");',
    "ruby": "STDOUT.write(@TEXT@)\nSTDOUT.flush\nexit!(0)",
    "php": "echo @TEXT@;\nexit(0);",
    "lua": "io.write(@TEXT@)\nio.stdout:flush()\nos.exit(0)",
}
SPIN = {
    "python": "while True:\n    pass",
    "c": "volatile unsigned long tp_n = 0;\nfor (;;) tp_n++;",
    "cpp": "volatile unsigned long tp_n = 0;\nfor (;;) tp_n++;",
    "java": "while (true) { }",
    "csharp": "while (true) { }",
    "go": "for {\n}",
    "rust": "loop {}",
    "javascript": "for (;;) {}",
    "typescript": "for (;;) {}",
    "ruby": "loop {}",
    "php": "while (true) {}",
    "lua": "while true do end",
}


def _dialect(language: str) -> str:
    # TypeScript's declared result needs a throw after process.exit: its own entry.
    return language if language in EXIT else DIALECTS.get(language, language)


def function_probes(language: str, entry_point: str, signature: dict[str, Any], visible: list[Any]) -> list[Probe]:
    """The function-call probes of a task in `language` ([] for a signature no driver reads)."""
    family = _dialect(language)
    if family not in EXIT or not drivers.supported(language):
        return []

    def define(body: str) -> str:
        return drivers.declaration(language, signature, entry_point, body)

    found = [
        Probe(
            "exit_in_function",
            "Ends the process with status 0 on the first call, before any result is written.",
            define(EXIT[family]),
        )
    ]
    if visible and isinstance(visible[0], dict) and "expected" in visible[0]:
        tokens: list[str] = []
        encode_value(parse_type(signature["returns"]), visible[0]["expected"], tokens)
        # Tokens are ASCII letters, digits, '.', '-' and '+': a literal needs only its newlines escaped.
        literal = '"' + f"\n{MARKER}\n{' '.join(tokens)}\n".replace("\n", "\\n") + '"'
        found.append(
            Probe(
                "print_fake_result",
                "Writes a result line with the visible example's expected value, as the driver would, and exits "
                "before the driver writes the real one.",
                define(PRINT_AND_EXIT[family].replace("@TEXT@", literal)),
            )
        )
    found.append(Probe("spin_forever", "Spins in a busy loop inside the call, forever.", define(SPIN[family])))
    return found
