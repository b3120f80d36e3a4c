"""Probes for programs in the languages other than Python (stdio tasks), in each one's idiom.

The Python probes (stdio_hacks.py) lean on the interpreter: a frame walk, the garbage
collector, a sitecustomize. A compiled or another interpreted language is probed with
the hacks that exist there:
- `exit_before_main`: ending with status 0 before reading or writing anything, from
  where the language runs code before `main` (C's constructor attribute, a C++ static
  initialiser, Java's and C#'s static initialisers, Go's `init`) or at the top;
- `print_sample_output`: printing the visible case's expected output whatever the input;
- `spin_forever`: a busy loop, which must end as a timeout;
- `allocate_forever`: allocating and touching memory until something stops it, which
  must end as a failure of the program (memory, a runtime error), never a pass and
  never the sandbox's error.
Each is one small program per language, complete (a Java `Main`, a C# class with `Main`).
"""

from __future__ import annotations

from evaluation.verification.probes.render import Probe

# The printable ASCII a string literal may hold as is in every language below, past
# the escapes written for it; an expected output with anything else is not spliced in.
_PLAIN = frozenset(chr(code) for code in range(0x20, 0x7F))
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}
# What else a double-quoted literal would interpolate in these languages.
_INTERPOLATED = {"ruby": {"#": "\\#"}, "php": {"$": "\\$"}}

EXIT_BEFORE_MAIN = {
    "c": "#include <unistd.h>\n\n__attribute__((constructor)) static void before_main(void) { _exit(0); }\n\n"
    "int main(void) { return 1; }\n",
    "cpp": "#include <cstdlib>\n\nstatic int early = (std::exit(0), 0);\n\nint main() { return early + 1; }\n",
    "java": "public class Main {\n    static { System.exit(0); }\n\n"
    "    public static void main(String[] args) { System.exit(1); }\n}\n",
    "javascript": "process.exit(0);\n",
    "go": 'package main\n\nimport "os"\n\nfunc init() { os.Exit(0) }\n\nfunc main() { os.Exit(1) }\n',
    "rust": "fn main() {\n    std::process::exit(0);\n}\n",
    "ruby": "exit!(0)\n",
    "php": "<?php\nexit(0);\n",
    "lua": "os.exit(0)\n",
    "csharp": "using System;\n\nclass Program {\n    static Program() { Environment.Exit(0); }\n\n"
    "    static void Main() { Environment.Exit(1); }\n}\n",
}

PRINT = {
    "c": "#include <stdio.h>\n\nint main(void) {\n    fputs(@OUTPUT@, stdout);\n    return 0;\n}\n",
    "cpp": "#include <cstdio>\n\nint main() {\n    std::fputs(@OUTPUT@, stdout);\n    return 0;\n}\n",
    "java": "public class Main {\n    public static void main(String[] args) {\n"
    "        System.out.print(@OUTPUT@);\n    }\n}\n",
    "javascript": "process.stdout.write(@OUTPUT@);\n",
    "go": 'package main\n\nimport "os"\n\nfunc main() {\n\tos.Stdout.WriteString(@OUTPUT@)\n}\n',
    "rust": 'fn main() {\n    print!("{}", @OUTPUT@);\n}\n',
    "ruby": "$stdout.write(@OUTPUT@)\n",
    "php": "<?php\necho @OUTPUT@;\n",
    "lua": "io.write(@OUTPUT@)\n",
    "csharp": "class Program {\n    static void Main() {\n        System.Console.Out.Write(@OUTPUT@);\n    }\n}\n",
}

SPIN = {
    "c": "int main(void) {\n    volatile unsigned long n = 0;\n    for (;;) n++;\n}\n",
    "cpp": "int main() {\n    volatile unsigned long n = 0;\n    for (;;) n++;\n}\n",
    "java": "public class Main {\n    static volatile long n;\n\n"
    "    public static void main(String[] args) {\n        for (;;) n++;\n    }\n}\n",
    "javascript": "let n = 0;\nfor (;;) n++;\n",
    "go": "package main\n\nvar n uint64\n\nfunc main() {\n\tfor {\n\t\tn++\n\t}\n}\n",
    "rust": "use std::sync::atomic::{AtomicU64, Ordering};\n\nstatic N: AtomicU64 = AtomicU64::new(0);\n\n"
    "fn main() {\n    loop {\n        N.fetch_add(1, Ordering::Relaxed);\n    }\n}\n",
    "ruby": "n = 0\nloop { n += 1 }\n",
    "php": "<?php\n$n = 0;\nwhile (true) { $n++; }\n",
    "lua": "local n = 0\nwhile true do n = n + 1 end\n",
    "csharp": "class Program {\n    static volatile int n;\n\n"
    "    static void Main() {\n        for (;;) n++;\n    }\n}\n",
}

ALLOCATE = {
    "c": "#include <stdlib.h>\n#include <string.h>\n\nint main(void) {\n    for (;;) {\n"
    "        char *block = malloc(1 << 26);\n        if (block == NULL) return 0;\n"
    "        memset(block, 1, 1 << 26);\n    }\n}\n",
    "cpp": "#include <vector>\n\nint main() {\n    std::vector<std::vector<char>> keep;\n"
    "    for (;;) keep.emplace_back(1 << 26, 1);\n}\n",
    "java": "import java.util.ArrayList;\n\npublic class Main {\n    public static void main(String[] args) {\n"
    "        ArrayList<byte[]> keep = new ArrayList<>();\n        for (;;) {\n"
    "            byte[] block = new byte[1 << 26];\n            java.util.Arrays.fill(block, (byte) 1);\n"
    "            keep.add(block);\n        }\n    }\n}\n",
    "javascript": "const keep = [];\nfor (;;) keep.push(Buffer.alloc(1 << 26, 1));\n",
    "go": "package main\n\nvar keep [][]byte\n\nfunc main() {\n\tfor {\n\t\tblock := make([]byte, 1<<26)\n"
    "\t\tfor i := range block {\n\t\t\tblock[i] = 1\n\t\t}\n\t\tkeep = append(keep, block)\n\t}\n}\n",
    "rust": "fn main() {\n    let mut keep = Vec::new();\n"
    "    loop {\n        keep.push(vec![1u8; 1 << 26]);\n    }\n}\n",
    "ruby": "keep = []\nloop { keep << ('x' * (1 << 26)) }\n",
    "php": "<?php\n$keep = [];\nwhile (true) { $keep[] = str_repeat('x', 1 << 26); }\n",
    "lua": "local keep = {}\nwhile true do keep[#keep + 1] = string.rep('x', 1 << 26) .. #keep end\n",
    "csharp": "using System.Collections.Generic;\n\nclass Program {\n    static void Main() {\n"
    "        var keep = new List<byte[]>();\n        for (;;) {\n            var block = new byte[1 << 26];\n"
    "            for (int i = 0; i < block.Length; i += 4096) block[i] = 1;\n            keep.Add(block);\n"
    "        }\n    }\n}\n",
}

# The languages whose programs are another's: both C++ standards, and TypeScript (it
# compiles what plain JavaScript is, with the platform's Node declarations).
DIALECTS = {"cpp17": "cpp", "cpp20": "cpp", "typescript": "javascript"}


def language_probes(language: str, cases: dict[str, str]) -> list[Probe]:
    """The probes for a program in `language` (not Python), given its visible cases
    (input -> output); [] for a language with no programs here."""
    family = DIALECTS.get(language, language)
    if family not in EXIT_BEFORE_MAIN:
        return []
    found = [
        Probe(
            "exit_before_main",
            "Exits with status 0 before reading input or writing anything, from code the language runs before "
            "main (a constructor, a static initialiser, init) or at the top of the program.",
            EXIT_BEFORE_MAIN[family],
        )
    ]
    first_output = next(iter(cases.values()), None)
    literal = string_literal(first_output, language=family) if first_output is not None else None
    if literal is not None:
        found.append(
            Probe(
                "print_sample_output",
                "Prints the visible example's expected output whatever its input.",
                PRINT[family].replace("@OUTPUT@", literal),
            )
        )
    found += [
        Probe("spin_forever", "Counts in a busy loop forever, hoping a timed-out run is not a failure.", SPIN[family]),
        Probe(
            "allocate_forever",
            "Allocates and touches 64 MB blocks until something stops it, hoping an exhausted sandbox is "
            "blamed on the platform.",
            ALLOCATE[family],
        ),
    ]
    return found


def string_literal(text: str, *, language: str) -> str | None:
    """`text` as a double-quoted string literal of `language`, or None where it holds a
    character outside printable ASCII, tab and newline (not spliced into code at all)."""
    escapes = {**_ESCAPES, **_INTERPOLATED.get(language, {})}
    parts = []
    for character in text:
        if character in escapes:
            parts.append(escapes[character])
        elif character in _PLAIN:
            parts.append(character)
        else:
            return None
    return '"' + "".join(parts) + '"'
