"""Probes for programs in the languages other than Python (stdio tasks), in each one's idiom.

The Python probes (stdio_hacks.py) lean on the interpreter: a frame walk, the garbage
collector, a sitecustomize. A compiled or another interpreted language is probed with
the hacks that exist there:
- `exit_before_main`: ending with status 0 before reading or writing anything, from
  where the language runs code before `main` (C's constructor attribute, a C++ static
  initialiser, Java's and C#'s static initialisers, Go's `init`) or at the top;
- `print_sample_output`: printing the visible case's expected output whatever the input;
- `read_answer_file`: looking for the jury's answer where careless judges leave it, and
  printing it (here answers never enter a solution's sandbox: it finds none);
- `write_outside_scratch`: writing files outside its working directory, for a later
  run or the host to find (the sandbox's filesystem is read-only but for its own
  scratch, and a fresh one per run or a wiped one: nothing is left);
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

# Where a careless judge leaves the jury's answer (and what it calls it), and where a
# solution would leave something for a later run, or for the host, to find (paths
# inside the sandbox, for the probes' code: the host never opens them).
ANSWER_DIRS = (".", "..", "/tmp", "/scratch", "/", "/judge", "/data", "/var/tmp", "/home")  # noqa: S108
OUTSIDE_TARGETS = (
    "../taskplatform-probe",
    "/tmp/../taskplatform-probe",  # noqa: S108
    "/taskplatform-probe",
    "/usr/taskplatform-probe",
    "/etc/taskplatform-probe",
    "/proc/1/cwd/taskplatform-probe",
)

READ_ANSWER = {
    "c": (
        "#include <dirent.h>\n"
        "#include <stdio.h>\n"
        "#include <string.h>\n"
        "\n"
        "static int answer_like(const char *name) {\n"
        "    size_t n = strlen(name);\n"
        '    return strstr(name, "ans") || strstr(name, "expected") || (n > 4 && strcmp(name + n - 4, ".out") == 0);\n'
        "}\n"
        "\n"
        "int main(void) {\n"
        "    const char *dirs[] = {@DIRS@};\n"
        "    for (size_t d = 0; d < sizeof dirs / sizeof *dirs; d++) {\n"
        "        DIR *dir = opendir(dirs[d]);\n"
        "        if (!dir) continue;\n"
        "        struct dirent *entry;\n"
        "        while ((entry = readdir(dir)) != NULL) {\n"
        "            if (!answer_like(entry->d_name)) continue;\n"
        "            char path[4096];\n"
        '            snprintf(path, sizeof path, "%s/%s", dirs[d], entry->d_name);\n'
        '            FILE *file = fopen(path, "r");\n'
        "            if (!file) continue;\n"
        "            char buffer[65536];\n"
        "            size_t got = fread(buffer, 1, sizeof buffer, file);\n"
        "            fwrite(buffer, 1, got, stdout);\n"
        "            return 0;\n"
        "        }\n"
        "        closedir(dir);\n"
        "    }\n"
        "    return 0;\n"
        "}\n"
    ),
    "cpp": (
        "#include <filesystem>\n"
        "#include <fstream>\n"
        "#include <iostream>\n"
        "#include <string>\n"
        "\n"
        "int main() {\n"
        "    namespace fs = std::filesystem;\n"
        "    for (const char *dir : {@DIRS@}) {\n"
        "        std::error_code error;\n"
        "        for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {\n"
        "            std::string name = it->path().filename().string();\n"
        '            bool answer = name.find("ans") != std::string::npos;\n'
        '            answer = answer || name.find("expected") != std::string::npos;\n'
        '            answer = answer || it->path().extension() == ".out";\n'
        "            std::ifstream file(it->path());\n"
        "            if (answer && file) {\n"
        "                std::cout << file.rdbuf();\n"
        "                return 0;\n"
        "            }\n"
        "        }\n"
        "    }\n"
        "}\n"
    ),
    "java": (
        "import java.io.File;\n"
        "import java.nio.file.Files;\n"
        "\n"
        "public class Main {\n"
        "    public static void main(String[] args) throws Exception {\n"
        "        for (String dir : new String[] {@DIRS@}) {\n"
        "            File[] files = new File(dir).listFiles();\n"
        "            if (files == null) continue;\n"
        "            for (File file : files) {\n"
        "                String name = file.getName();\n"
        '                boolean answer = name.contains("ans") || name.contains("expected") || name.endsWith(".out");\n'
        "                if (answer && file.isFile() && file.canRead()) {\n"
        "                    System.out.print(new String(Files.readAllBytes(file.toPath())));\n"
        "                    return;\n"
        "                }\n"
        "            }\n"
        "        }\n"
        "    }\n"
        "}\n"
    ),
    "javascript": (
        'const fs = require("fs");\n'
        "for (const dir of [@DIRS@]) {\n"
        "  let names = [];\n"
        "  try { names = fs.readdirSync(dir); } catch (error) { continue; }\n"
        "  for (const name of names) {\n"
        '    if (!(name.includes("ans") || name.includes("expected") || name.endsWith(".out"))) continue;\n'
        "    try {\n"
        '      process.stdout.write(fs.readFileSync(dir + "/" + name));\n'
        "      process.exit(0);\n"
        "    } catch (error) {}\n"
        "  }\n"
        "}\n"
    ),
    "go": (
        "package main\n"
        "\n"
        "import (\n"
        '\t"os"\n'
        '\t"strings"\n'
        ")\n"
        "\n"
        "func main() {\n"
        "\tfor _, dir := range []string{@DIRS@} {\n"
        "\t\tentries, err := os.ReadDir(dir)\n"
        "\t\tif err != nil {\n"
        "\t\t\tcontinue\n"
        "\t\t}\n"
        "\t\tfor _, entry := range entries {\n"
        "\t\t\tname := entry.Name()\n"
        '\t\t\tanswer := strings.Contains(name, "ans") || strings.Contains(name, "expected")\n'
        '\t\t\tif !(answer || strings.HasSuffix(name, ".out")) {\n'
        "\t\t\t\tcontinue\n"
        "\t\t\t}\n"
        '\t\t\tif data, err := os.ReadFile(dir + "/" + name); err == nil {\n'
        "\t\t\t\tos.Stdout.Write(data)\n"
        "\t\t\t\treturn\n"
        "\t\t\t}\n"
        "\t\t}\n"
        "\t}\n"
        "}\n"
    ),
    "rust": (
        "use std::fs;\n"
        "use std::io::Write;\n"
        "\n"
        "fn main() {\n"
        "    for dir in [@DIRS@] {\n"
        "        let entries = match fs::read_dir(dir) {\n"
        "            Ok(entries) => entries,\n"
        "            Err(_) => continue,\n"
        "        };\n"
        "        for entry in entries.flatten() {\n"
        "            let name = entry.file_name().to_string_lossy().to_string();\n"
        '            if !(name.contains("ans") || name.contains("expected") || name.ends_with(".out")) {\n'
        "                continue;\n"
        "            }\n"
        "            if let Ok(data) = fs::read(entry.path()) {\n"
        "                std::io::stdout().write_all(&data).ok();\n"
        "                return;\n"
        "            }\n"
        "        }\n"
        "    }\n"
        "}\n"
    ),
    "ruby": (
        "[@DIRS@].each do |dir|\n"
        "  names = Dir.children(dir) rescue next\n"
        "  names.each do |name|\n"
        '    next unless name.include?("ans") || name.include?("expected") || name.end_with?(".out")\n'
        "    begin\n"
        "      $stdout.write(File.binread(File.join(dir, name)))\n"
        "      exit(0)\n"
        "    rescue StandardError\n"
        "      next\n"
        "    end\n"
        "  end\n"
        "end\n"
    ),
    "php": (
        "<?php\n"
        "foreach ([@DIRS@] as $dir) {\n"
        "    $names = @scandir($dir);\n"
        "    if ($names === false) continue;\n"
        "    foreach ($names as $name) {\n"
        '        $answer = str_contains($name, "ans") || str_contains($name, "expected");\n'
        '        if (!($answer || str_ends_with($name, ".out"))) continue;\n'
        '        $data = @file_get_contents("$dir/$name");\n'
        '        if ($data !== false && is_file("$dir/$name")) {\n'
        "            echo $data;\n"
        "            exit(0);\n"
        "        }\n"
        "    }\n"
        "}\n"
    ),
    "lua": (
        "-- Lua has no directory listing of its own: try the names a careless judge uses.\n"
        "for _, dir in ipairs({@DIRS@}) do\n"
        '  local names = {"answer", "answer.txt", "expected", "expected.out", "output.ans", "1.ans", "test.out"}\n'
        "  for _, name in ipairs(names) do\n"
        '    local file = io.open(dir .. "/" .. name, "rb")\n'
        "    if file then\n"
        '      local data = file:read("a")\n'
        "      file:close()\n"
        "      if data then\n"
        "        io.write(data)\n"
        "        os.exit(0)\n"
        "      end\n"
        "    end\n"
        "  end\n"
        "end\n"
    ),
    "csharp": (
        "using System;\n"
        "using System.IO;\n"
        "\n"
        "class Program {\n"
        "    static void Main() {\n"
        "        foreach (var dir in new[] {@DIRS@}) {\n"
        "            string[] files;\n"
        "            try { files = Directory.GetFiles(dir); } catch (Exception) { continue; }\n"
        "            foreach (var path in files) {\n"
        "                var name = Path.GetFileName(path);\n"
        '                if (!(name.Contains("ans") || name.Contains("expected") || name.EndsWith(".out"))) continue;\n'
        "                try {\n"
        "                    Console.Out.Write(File.ReadAllText(path));\n"
        "                    return;\n"
        "                } catch (Exception) { }\n"
        "            }\n"
        "        }\n"
        "    }\n"
        "}\n"
    ),
}

WRITE_OUTSIDE = {
    "c": (
        "#include <stdio.h>\n"
        "\n"
        "int main(void) {\n"
        "    const char *targets[] = {@TARGETS@};\n"
        "    for (size_t i = 0; i < sizeof targets / sizeof *targets; i++) {\n"
        '        FILE *file = fopen(targets[i], "w");\n'
        "        if (file) {\n"
        '            fputs("left by a solution\\n", file);\n'
        "            fclose(file);\n"
        "        }\n"
        "    }\n"
        "    return 0;\n"
        "}\n"
    ),
    "cpp": (
        "#include <fstream>\n"
        "\n"
        "int main() {\n"
        "    for (const char *target : {@TARGETS@}) {\n"
        "        std::ofstream file(target);\n"
        '        if (file) file << "left by a solution\\n";\n'
        "    }\n"
        "}\n"
    ),
    "java": (
        "import java.io.FileWriter;\n"
        "\n"
        "public class Main {\n"
        "    public static void main(String[] args) {\n"
        "        for (String target : new String[] {@TARGETS@}) {\n"
        "            try (FileWriter file = new FileWriter(target)) {\n"
        '                file.write("left by a solution\\n");\n'
        "            } catch (Exception error) {\n"
        "            }\n"
        "        }\n"
        "    }\n"
        "}\n"
    ),
    "javascript": (
        'const fs = require("fs");\n'
        "for (const target of [@TARGETS@]) {\n"
        '  try { fs.writeFileSync(target, "left by a solution\\n"); } catch (error) {}\n'
        "}\n"
    ),
    "go": (
        "package main\n"
        "\n"
        'import "os"\n'
        "\n"
        "func main() {\n"
        "\tfor _, target := range []string{@TARGETS@} {\n"
        '\t\tos.WriteFile(target, []byte("left by a solution\\n"), 0o644)\n'
        "\t}\n"
        "}\n"
    ),
    "rust": (
        "fn main() {\n"
        "    for target in [@TARGETS@] {\n"
        '        std::fs::write(target, "left by a solution\\n").ok();\n'
        "    }\n"
        "}\n"
    ),
    "ruby": ('[@TARGETS@].each do |target|\n  File.write(target, "left by a solution\\n") rescue nil\nend\n'),
    "php": (
        '<?php\nforeach ([@TARGETS@] as $target) {\n    @file_put_contents($target, "left by a solution\\n");\n}\n'
    ),
    "lua": (
        "for _, target in ipairs({@TARGETS@}) do\n"
        '  local file = io.open(target, "w")\n'
        "  if file then\n"
        '    file:write("left by a solution\\n")\n'
        "    file:close()\n"
        "  end\n"
        "end\n"
    ),
    "csharp": (
        "using System;\n"
        "using System.IO;\n"
        "\n"
        "class Program {\n"
        "    static void Main() {\n"
        "        foreach (var target in new[] {@TARGETS@}) {\n"
        '            try { File.WriteAllText(target, "left by a solution\\n"); } catch (Exception) { }\n'
        "        }\n"
        "    }\n"
        "}\n"
    ),
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
        Probe(
            "read_answer_file",
            "Looks for the jury's answer where careless judges leave it (files named like answers or expected "
            "outputs beside the program, in its parent, /tmp, /scratch, /) and prints the first it can read.",
            READ_ANSWER[family].replace("@DIRS@", _list(ANSWER_DIRS)),
        ),
        Probe(
            "write_outside_scratch",
            "Writes a file outside its working directory (its parent, /tmp/.., /, /usr, /etc, the judge's working "
            "directory through /proc/1/cwd), to leave something for a later run or the host, then prints nothing.",
            WRITE_OUTSIDE[family].replace("@TARGETS@", _list(OUTSIDE_TARGETS)),
        ),
        Probe("spin_forever", "Counts in a busy loop forever, hoping a timed-out run is not a failure.", SPIN[family]),
        Probe(
            "allocate_forever",
            "Allocates and touches 64 MB blocks until something stops it, hoping an exhausted sandbox is "
            "blamed on the platform.",
            ALLOCATE[family],
        ),
    ]
    return found


def _list(paths: tuple[str, ...]) -> str:
    """Paths as the items of a string list, written alike in every language here."""
    return ", ".join(f'"{path}"' for path in paths)


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
