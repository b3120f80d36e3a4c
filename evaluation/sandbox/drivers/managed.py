# ruff: noqa: E501  (lines of Java and C#, kept whole so they read as code)
"""Drivers for Java and C# (compiled.py's contract): a static method of a class
`Solution`, called by a driver class appended after it, with fully qualified names so
the solution's own imports stay first in the file."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from evaluation.sandbox.drivers.value_types import (
    MARKER,
    Type,
    indented,
    mangle,
    param_names,
    param_types,
    return_type,
    subtypes,
)

# --- Java -------------------------------------------------------------------------------

_JAVA_BOXED = {"int": "Long", "float": "Double", "bool": "Boolean", "str": "String"}
_JAVA_SCALAR = {"int": "long", "float": "double", "bool": "boolean", "str": "String"}
_JAVA_READ = {
    "int": "Long.parseLong(tp_next())",
    "float": "Double.parseDouble(tp_next())",
    "bool": 'tp_next().equals("1")',
    "str": "tp_str(tp_next())",
}
_JAVA_WRITE = {
    "int": "o.append(v).append(' ');",
    "float": "o.append(Double.toString(v)).append(' ');",
    "bool": 'o.append(v ? "1 " : "0 ");',
    "str": "if (v == null) { o.append(\"? \"); return; } o.append('s');"
    ' for (byte b : v.getBytes(java.nio.charset.StandardCharsets.UTF_8)) o.append(String.format("%02x", b & 255));'
    " o.append(' ');",
}


def _java_type(kind: Type, boxed: bool = False) -> str:
    if kind[0] == "list":
        return f"java.util.List<{_java_type(kind[1], boxed=True)}>"
    return (_JAVA_BOXED if boxed else _JAVA_SCALAR)[kind[0]]


@dataclass(frozen=True)
class JavaBuilder:
    def program(self, signature: dict[str, Any], entry_point: str, solution: str) -> str:
        kinds = param_types(signature)
        returns = return_type(signature)
        methods = []
        for kind in subtypes([*kinds, returns]):
            name, java = mangle(kind), _java_type(kind)
            if kind[0] == "list":
                inner = mangle(kind[1])
                methods.append(
                    f"  static {java} tp_rd_{name}() {{ int n = (int) Long.parseLong(tp_next());"
                    f" java.util.ArrayList<{_java_type(kind[1], boxed=True)}> v = new java.util.ArrayList<>(n);"
                    f" for (int i = 0; i < n; i++) v.add(tp_rd_{inner}()); return v; }}\n"
                    f'  static void tp_wr_{name}(StringBuilder o, {java} v) {{ if (v == null) {{ o.append("? ");'
                    f" return; }} o.append(v.size()).append(' ');"
                    f' for ({_java_type(kind[1], boxed=True)} x : v) {{ if (x == null) o.append("? ");'
                    f" else tp_wr_{inner}(o, x); }} }}\n"
                )
            else:
                methods.append(
                    f"  static {java} tp_rd_{name}() {{ return {_JAVA_READ[kind[0]]}; }}\n"
                    f"  static void tp_wr_{name}(StringBuilder o, {java} v) {{ {_JAVA_WRITE[kind[0]]} }}\n"
                )
        reads = "".join(f"    {_java_type(k)} a{i} = tp_rd_{mangle(k)}();\n" for i, k in enumerate(kinds))
        args = ", ".join(f"a{i}" for i in range(len(kinds)))
        driver = (
            "\nclass Main {\n  static String[] tp_toks; static int tp_pos = 0;\n"
            "  static String tp_next() { if (tp_pos >= tp_toks.length) System.exit(86); return tp_toks[tp_pos++]; }\n"
            "  static String tp_str(String t) { byte[] b = new byte[(t.length() - 1) / 2];"
            " for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(t.substring(1 + 2 * i, 3 + 2 * i), 16);"
            " return new String(b, java.nio.charset.StandardCharsets.UTF_8); }\n"
            + "".join(methods)
            + "  public static void main(String[] args) throws Exception {\n"
            "    String in = new String(System.in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).trim();\n"
            '    tp_toks = in.isEmpty() ? new String[0] : in.split("\\\\s+");\n'
            + reads
            + f"    {_java_type(returns)} r = Solution.{entry_point}({args});\n"
            f'    StringBuilder o = new StringBuilder("\\n{MARKER}\\n");\n'
            f"    tp_wr_{mangle(returns)}(o, r);\n    o.append('\\n');\n"
            "    System.out.print(o);\n    System.out.flush();\n  }\n}\n"
        )  # fmt: skip
        # The file is Main.java: a `public class Solution` would have to be Solution.java.
        solution = re.sub(r"\bpublic\s+((?:final\s+)?class\s+Solution\b)", r"\1", solution)
        return solution.rstrip("\n") + "\n" + driver

    def declaration(self, signature: dict[str, Any], entry_point: str, body: str = "") -> str:
        params = ", ".join(
            f"{_java_type(k).replace('java.util.', '')} {n}"
            for k, n in zip(param_types(signature), param_names(signature), strict=True)
        )
        returns = _java_type(return_type(signature)).replace("java.util.", "")
        method = f"    public static {returns} {entry_point}({params}) {{\n{indented(body, 2)}    }}\n"
        return f"import java.util.*;\n\nclass Solution {{\n{method}}}\n"


# --- C# ---------------------------------------------------------------------------------

_CS_SCALAR = {"int": "long", "float": "double", "bool": "bool", "str": "string"}
_CS_INV = "System.Globalization.CultureInfo.InvariantCulture"
_CS_READ = {
    "int": f"long.Parse(Next(), {_CS_INV})",
    "float": f"double.Parse(Next(), System.Globalization.NumberStyles.Float, {_CS_INV})",
    "bool": 'Next() == "1"',
    "str": "Str(Next())",
}
_CS_WRITE = {
    "int": f"o.Append(v.ToString({_CS_INV})).Append(' ');",
    "float": f"o.Append(v.ToString(\"R\", {_CS_INV})).Append(' ');",
    "bool": 'o.Append(v ? "1 " : "0 ");',
    "str": "if (v == null) { o.Append(\"? \"); return; } o.Append('s');"
    " foreach (byte b in System.Text.Encoding.UTF8.GetBytes(v)) o.Append(b.ToString(\"x2\")); o.Append(' ');",
}


def _cs_type(kind: Type) -> str:
    if kind[0] == "list":
        return f"System.Collections.Generic.List<{_cs_type(kind[1])}>"
    return _CS_SCALAR[kind[0]]


@dataclass(frozen=True)
class CSharpBuilder:
    def program(self, signature: dict[str, Any], entry_point: str, solution: str) -> str:
        kinds = param_types(signature)
        returns = return_type(signature)
        methods = []
        for kind in subtypes([*kinds, returns]):
            name, cs = mangle(kind), _cs_type(kind)
            if kind[0] == "list":
                inner = mangle(kind[1])
                methods.append(
                    f"  static {cs} Rd_{name}() {{ int n = (int) long.Parse(Next(), {_CS_INV}); var v = new {cs}(n);"
                    f" for (int i = 0; i < n; i++) v.Add(Rd_{inner}()); return v; }}\n"
                    f"  static void Wr_{name}(System.Text.StringBuilder o, {cs} v) {{ if (v == null) {{"
                    f" o.Append(\"? \"); return; }} o.Append(v.Count).Append(' '); foreach (var x in v) Wr_{inner}(o, x); }}\n"
                )
            else:
                methods.append(
                    f"  static {cs} Rd_{name}() {{ return {_CS_READ[kind[0]]}; }}\n"
                    f"  static void Wr_{name}(System.Text.StringBuilder o, {cs} v) {{ {_CS_WRITE[kind[0]]} }}\n"
                )
        reads = "".join(f"    {_cs_type(k)} a{i} = Rd_{mangle(k)}();\n" for i, k in enumerate(kinds))
        args = ", ".join(f"a{i}" for i in range(len(kinds)))
        driver = (
            "\nstatic class TpDriver {\n  static string[] toks; static int pos = 0;\n"
            "  static string Next() { if (pos >= toks.Length) System.Environment.Exit(86); return toks[pos++]; }\n"
            "  static string Str(string t) { var b = new byte[(t.Length - 1) / 2];"
            " for (int i = 0; i < b.Length; i++) b[i] = System.Convert.ToByte(t.Substring(1 + 2 * i, 2), 16);"
            " return System.Text.Encoding.UTF8.GetString(b); }\n"
            + "".join(methods)
            + "  static void Main() {\n"
            "    toks = System.Console.In.ReadToEnd().Split((char[]) null, System.StringSplitOptions.RemoveEmptyEntries);\n"
            + reads
            + f"    {_cs_type(returns)} r = Solution.{entry_point}({args});\n"
            f'    var o = new System.Text.StringBuilder("\\n{MARKER}\\n");\n'
            f"    Wr_{mangle(returns)}(o, r);\n    o.Append('\\n');\n"
            "    System.Console.Out.Write(o.ToString());\n    System.Console.Out.Flush();\n  }\n}\n"
        )  # fmt: skip
        return solution.rstrip("\n") + "\n" + driver

    def declaration(self, signature: dict[str, Any], entry_point: str, body: str = "") -> str:
        short = lambda kind: _cs_type(kind).replace("System.Collections.Generic.", "")  # noqa: E731
        params = ", ".join(
            f"{short(k)} {n}" for k, n in zip(param_types(signature), param_names(signature), strict=True)
        )
        return (
            "using System;\nusing System.Collections.Generic;\n\nclass Solution {\n"
            f"    public static {short(return_type(signature))} {entry_point}({params}) {{\n{indented(body, 2)}    }}\n}}\n"
        )
