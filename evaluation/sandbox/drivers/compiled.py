# ruff: noqa: E501  (lines of C, Java, C#, Go and Rust, kept whole so they read as code)
"""Drivers for the statically typed languages: C, C++, Java, C#, Go and Rust.

Each reads the arguments into variables of the declared types, calls the function and
writes its result; a solution whose function has another signature does not compile
with its driver, and that is its `compile_error`. The compiler's messages keep the
solution's own line numbers: C and C++ put their driver's helpers first and then say
`#line 1`; Go imports what its driver needs on the solution's `package` line; the
others append.

The declarations (`declaration`) are what a solution must define:
- C: `long long`, `double`, `bool`, `char *` (a NUL-terminated UTF-8 string); a list
  is two parameters, `T *name, size_t name_len`, and a list result a `T *` with its
  length written through a last parameter `size_t *out_len`; lists of lists are not
  for C;
- C++: `long long`, `double`, `bool`, `std::string`, `std::vector<T>`;
- Java: `long`, `double`, `boolean`, `String`, `List<Long>`...: a static method of a
  class `Solution` (`import java.util.*;`);
- C#: `long`, `double`, `bool`, `string`, `List<T>`: a static method of a class `Solution`;
- Go: `int`, `float64`, `bool`, `string`, `[]T` in `package main`;
- Rust: `i64`, `f64`, `bool`, `String`, `Vec<T>`, taken by value.
None of them may define its own `main` (the driver's is the program's).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from evaluation.sandbox.drivers import managed
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

_HEX = '"0123456789abcdef"'


# --- C++ ------------------------------------------------------------------------------

_CPP_PRELUDE = f"""#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>
namespace tp_driver {{
static std::vector<std::string> toks;
static std::size_t pos = 0;
inline const std::string &next() {{ if (pos >= toks.size()) std::exit(86); return toks[pos++]; }}
inline void rd(long long &v) {{ v = std::strtoll(next().c_str(), nullptr, 10); }}
inline void rd(double &v) {{ v = std::strtod(next().c_str(), nullptr); }}
inline void rd(bool &v) {{ v = next() == "1"; }}
inline void rd(std::string &v) {{
  const std::string &t = next(); v.clear();
  for (std::size_t i = 1; i + 1 < t.size(); i += 2) v.push_back((char)std::stoi(t.substr(i, 2), nullptr, 16));
}}
template <class T> void rd(std::vector<T> &v) {{
  long long n; rd(n); v.clear(); v.reserve(n);
  for (long long i = 0; i < n; i++) {{ T x; rd(x); v.push_back(x); }}
}}
inline void wr(std::string &o, long long v) {{ o += std::to_string(v); o += ' '; }}
inline void wr(std::string &o, double v) {{ char b[64]; std::snprintf(b, sizeof b, "%.17g", v); o += b; o += ' '; }}
inline void wr(std::string &o, bool v) {{ o += v ? "1 " : "0 "; }}
inline void wr(std::string &o, const std::string &v) {{
  o += 's'; for (unsigned char c : v) {{ o += {_HEX}[c >> 4]; o += {_HEX}[c & 15]; }} o += ' ';
}}
template <class T> void wr(std::string &o, const std::vector<T> &v) {{
  wr(o, (long long)v.size()); for (std::size_t i = 0; i < v.size(); i++) wr(o, (T)v[i]);
}}
}}
#line 1
"""


def _cpp_type(kind: Type) -> str:
    if kind[0] == "list":
        return f"std::vector<{_cpp_type(kind[1])}>"
    return {"int": "long long", "float": "double", "bool": "bool", "str": "std::string"}[kind[0]]


@dataclass(frozen=True)
class CppBuilder:
    def program(self, signature: dict[str, Any], entry_point: str, solution: str) -> str:
        kinds = param_types(signature)
        reads = "".join(f"  {_cpp_type(k)} tp_a{i}; tp_driver::rd(tp_a{i});\n" for i, k in enumerate(kinds))
        args = ", ".join(f"tp_a{i}" for i in range(len(kinds)))
        returns = _cpp_type(return_type(signature))
        # `signed main`: a solution's `#define int long long` leaves it a valid main.
        main = (
            "\nsigned main() {\n"
            "  { std::string t; while (std::cin >> t) tp_driver::toks.push_back(t); }\n"
            f"{reads}"
            f"  {returns} tp_r = static_cast<{returns}>({entry_point}({args}));\n"
            f'  std::string tp_o = "\\n{MARKER}\\n";\n'
            "  tp_driver::wr(tp_o, tp_r);\n  tp_o += '\\n';\n"
            "  std::fwrite(tp_o.data(), 1, tp_o.size(), stdout);\n  std::fflush(stdout);\n  return 0;\n}\n"
        )
        return _CPP_PRELUDE + solution.rstrip("\n") + "\n" + main

    def declaration(self, signature: dict[str, Any], entry_point: str, body: str = "") -> str:
        params = ", ".join(
            f"{_cpp_type(k)} {n}" for k, n in zip(param_types(signature), param_names(signature), strict=True)
        )
        head = f"#include <bits/stdc++.h>\n\n{_cpp_type(return_type(signature))} {entry_point}({params})"
        return f"{head} {{\n{indented(body)}}}\n"


# --- C ----------------------------------------------------------------------------------

_C_PRELUDE = f"""#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static char **tp_toks; static size_t tp_ntoks, tp_pos;
static char *tp_out; static size_t tp_len, tp_cap;
static void tp_read_all(void) {{
  size_t cap = 1 << 16, len = 0, n; char *buf = malloc(cap);
  while ((n = fread(buf + len, 1, cap - len - 1, stdin)) > 0) {{ len += n; if (cap - len < 2) buf = realloc(buf, cap *= 2); }}
  buf[len] = 0; size_t tcap = 64; tp_toks = malloc(tcap * sizeof *tp_toks);
  for (char *t = strtok(buf, " \\t\\r\\n"); t; t = strtok(NULL, " \\t\\r\\n")) {{
    if (tp_ntoks == tcap) tp_toks = realloc(tp_toks, (tcap *= 2) * sizeof *tp_toks);
    tp_toks[tp_ntoks++] = t;
  }}
}}
static const char *tp_next(void) {{ if (tp_pos >= tp_ntoks) exit(86); return tp_toks[tp_pos++]; }}
static void tp_put(const char *s) {{
  size_t n = strlen(s);
  if (tp_len + n + 1 > tp_cap) {{ tp_cap = (tp_len + n + 1) * 2; tp_out = realloc(tp_out, tp_cap); }}
  memcpy(tp_out + tp_len, s, n + 1); tp_len += n;
}}
static long long tp_rd_int(void) {{ return strtoll(tp_next(), NULL, 10); }}
static double tp_rd_float(void) {{ return strtod(tp_next(), NULL); }}
static bool tp_rd_bool(void) {{ return strcmp(tp_next(), "1") == 0; }}
static char *tp_rd_str(void) {{
  const char *t = tp_next() + 1; size_t n = strlen(t) / 2; char *s = malloc(n + 1);
  for (size_t i = 0; i < n; i++) {{ char h[3] = {{t[2 * i], t[2 * i + 1], 0}}; s[i] = (char)strtol(h, NULL, 16); }}
  s[n] = 0; return s;
}}
static void tp_wr_int(long long v) {{ char b[32]; snprintf(b, sizeof b, "%lld ", v); tp_put(b); }}
static void tp_wr_float(double v) {{ char b[64]; snprintf(b, sizeof b, "%.17g ", v); tp_put(b); }}
static void tp_wr_bool(bool v) {{ tp_put(v ? "1 " : "0 "); }}
static void tp_wr_str(const char *v) {{
  if (!v) {{ tp_put("? "); return; }}
  tp_put("s"); char b[3];
  for (const unsigned char *c = (const unsigned char *)v; *c; c++) {{ b[0] = {_HEX}[*c >> 4]; b[1] = {_HEX}[*c & 15]; b[2] = 0; tp_put(b); }}
  tp_put(" ");
}}
"""
_C_SCALAR = {"int": "long long", "float": "double", "bool": "bool", "str": "char *"}
_C_LIST_ELEMENT = {"int": "const long long *", "float": "const double *", "bool": "const bool *", "str": "char **"}


def _c_list_helpers(kind: Type) -> str:
    element = kind[1][0]
    name = mangle(kind)
    c_type = _C_SCALAR[element]
    return (
        f"static {c_type} *tp_rd_{name}(size_t *n) {{\n"
        f"  *n = (size_t)tp_rd_int(); {c_type} *v = malloc((*n ? *n : 1) * sizeof *v);\n"
        f"  for (size_t i = 0; i < *n; i++) v[i] = tp_rd_{element}();\n  return v;\n}}\n"
        f"static void tp_wr_{name}({_C_LIST_ELEMENT[element]}v, size_t n) {{\n"
        '  if (!v && n) { tp_put("? "); return; }\n'
        f"  tp_wr_int((long long)n); for (size_t i = 0; i < n; i++) tp_wr_{element}(v[i]);\n}}\n"
    )


@dataclass(frozen=True)
class CBuilder:
    def program(self, signature: dict[str, Any], entry_point: str, solution: str) -> str:
        kinds = param_types(signature)
        returns = return_type(signature)
        helpers = "".join(_c_list_helpers(k) for k in subtypes([*kinds, returns]) if k[0] == "list")
        reads, args = [], []
        for i, kind in enumerate(kinds):
            if kind[0] == "list":
                reads.append(f"  size_t tp_n{i}; {_C_SCALAR[kind[1][0]]} *tp_a{i} = tp_rd_{mangle(kind)}(&tp_n{i});\n")
                args += [f"tp_a{i}", f"tp_n{i}"]
            else:
                reads.append(f"  {_C_SCALAR[kind[0]]} tp_a{i} = tp_rd_{kind[0]}();\n")
                args.append(f"tp_a{i}")
        if returns[0] == "list":
            call = f"  size_t tp_rn = 0;\n  {_C_LIST_ELEMENT[returns[1][0]]}tp_r = {entry_point}({', '.join([*args, '&tp_rn'])});\n"
            write = f"  tp_wr_{mangle(returns)}(tp_r, tp_rn);\n"
        else:
            c_type = "const char *" if returns[0] == "str" else _C_SCALAR[returns[0]] + " "
            call = f"  {c_type}tp_r = {entry_point}({', '.join(args)});\n"
            write = f"  tp_wr_{returns[0]}(tp_r);\n"
        # A result of another type than declared (an int * for a list of int) is an error, not a warning.
        main = (
            "\n#pragma GCC diagnostic error \"-Wincompatible-pointer-types\"\n"
            "#pragma GCC diagnostic error \"-Wint-conversion\"\n"
            "int main(void) {\n  tp_read_all();\n" + "".join(reads) + call
            + f'  tp_put("\\n{MARKER}\\n");\n' + write
            + '  tp_put("\\n");\n  fwrite(tp_out, 1, tp_len, stdout);\n  fflush(stdout);\n  return 0;\n}\n'
        )  # fmt: skip
        return _C_PRELUDE + helpers + "#line 1\n" + solution.rstrip("\n") + "\n" + main

    def declaration(self, signature: dict[str, Any], entry_point: str, body: str = "") -> str:
        params = []
        for kind, name in zip(param_types(signature), param_names(signature), strict=True):
            if kind[0] == "list":
                params += [_c_declared(_C_SCALAR[kind[1][0]] + " *", name), f"size_t {name}_len"]
            else:
                params.append(_c_declared(_C_SCALAR[kind[0]], name))
        returns = return_type(signature)
        if returns[0] == "list":
            params.append("size_t *out_len")
            result = _c_declared(_C_SCALAR[returns[1][0]] + " *", entry_point)
        else:
            result = _c_declared(_C_SCALAR[returns[0]], entry_point)
        head = "#include <stdbool.h>\n#include <stddef.h>\n#include <stdio.h>\n#include <stdlib.h>\n\n"
        return f"{head}{result}({', '.join(params)}) {{\n{indented(body)}}}\n"


def _c_declared(c_type: str, name: str) -> str:
    """`char **words`, `long long k`: a C declarator as people write it."""
    c_type = c_type.replace("* *", "**")
    return f"{c_type}{name}" if c_type.endswith("*") else f"{c_type} {name}"


# --- Go ---------------------------------------------------------------------------------

_GO_SCALAR = {"int": "int", "float": "float64", "bool": "bool", "str": "string"}
_GO_IMPORTS = 'import (tp_hex "encoding/hex"; tp_io "io"; tp_os "os"; tp_strconv "strconv"; tp_strings "strings")'
_GO_READ = {
    "int": "v, _ := tp_strconv.Atoi(tp_next()); return v",
    "float": "v, _ := tp_strconv.ParseFloat(tp_next(), 64); return v",
    "bool": 'return tp_next() == "1"',
    "str": "b, _ := tp_hex.DecodeString(tp_next()[1:]); return string(b)",
}
_GO_WRITE = {
    "int": "return append(tp_strconv.AppendInt(o, int64(v), 10), ' ')",
    "float": "return append(tp_strconv.AppendFloat(o, v, 'g', -1, 64), ' ')",
    "bool": 'if v { return append(o, "1 "...) }; return append(o, "0 "...)',
    "str": "return append(append(o, 's'), tp_hex.EncodeToString([]byte(v))+\" \"...)",
}
_GO_PACKAGE = re.compile(r"^(\s*package\s+)([A-Za-z_][A-Za-z0-9_]*)", re.MULTILINE)


def _go_type(kind: Type) -> str:
    return f"[]{_go_type(kind[1])}" if kind[0] == "list" else _GO_SCALAR[kind[0]]


@dataclass(frozen=True)
class GoBuilder:
    def program(self, signature: dict[str, Any], entry_point: str, solution: str) -> str:
        kinds = param_types(signature)
        returns = return_type(signature)
        funcs = []
        for kind in subtypes([*kinds, returns]):
            name, go = mangle(kind), _go_type(kind)
            if kind[0] == "list":
                inner = mangle(kind[1])
                funcs.append(
                    f"func tp_rd_{name}() {go} {{ n, _ := tp_strconv.Atoi(tp_next()); v := make({go}, n);"
                    f" for i := range v {{ v[i] = tp_rd_{inner}() }}; return v }}\n"
                    f"func tp_wr_{name}(o []byte, v {go}) []byte {{ o = tp_strconv.AppendInt(o, int64(len(v)), 10);"
                    f" o = append(o, ' '); for _, x := range v {{ o = tp_wr_{inner}(o, x) }}; return o }}\n"
                )
            else:
                funcs.append(
                    f"func tp_rd_{name}() {go} {{ {_GO_READ[kind[0]]} }}\n"
                    f"func tp_wr_{name}(o []byte, v {go}) []byte {{ {_GO_WRITE[kind[0]]} }}\n"
                )
        reads = "".join(f"\ttp_a{i} := tp_rd_{mangle(k)}()\n" for i, k in enumerate(kinds))
        args = ", ".join(f"tp_a{i}" for i in range(len(kinds)))
        driver = (
            "\nvar tp_toks []string\nvar tp_pos int\n"
            # Every import used, whichever types the signature has (Go refuses unused imports).
            "var _, _, _ = tp_hex.EncodeToString, tp_io.ReadAll, tp_strconv.Itoa\n"
            "func tp_next() string { if tp_pos >= len(tp_toks) { tp_os.Exit(86) }; tp_pos++; return tp_toks[tp_pos-1] }\n"
            + "".join(funcs)
            + "func main() {\n\tdata, _ := tp_io.ReadAll(tp_os.Stdin)\n\ttp_toks = tp_strings.Fields(string(data))\n"
            + reads
            + f"\tvar tp_r {_go_type(returns)} = {entry_point}({args})\n"
            f'\to := []byte("\\n{MARKER}\\n")\n\to = tp_wr_{mangle(returns)}(o, tp_r)\n'
            "\to = append(o, '\\n')\n\ttp_os.Stdout.Write(o)\n}\n"
        )  # fmt: skip
        # The driver's imports go on the package clause's own line (other import
        # declarations may follow it), so every line of the solution keeps its number.
        if _GO_PACKAGE.search(solution):
            solution = _GO_PACKAGE.sub(lambda m: f"{m.group(1)}main; {_GO_IMPORTS};", solution, count=1)
        else:
            solution = f"package main; {_GO_IMPORTS}\n{solution}"
        return solution.rstrip("\n") + "\n" + driver

    def declaration(self, signature: dict[str, Any], entry_point: str, body: str = "") -> str:
        params = ", ".join(
            f"{n} {_go_type(k)}" for k, n in zip(param_types(signature), param_names(signature), strict=True)
        )
        imports = "".join(f'import "{name}"\n' for name in ("fmt", "os") if f"{name}." in body)
        head = f"package main\n\n{imports}{chr(10) if imports else ''}func {entry_point}({params})"
        return f"{head} {_go_type(return_type(signature))} {{\n{indented(body)}}}\n"


# --- Rust -------------------------------------------------------------------------------

_RUST_DRIVER = """
#[allow(dead_code)]
mod tp_driver {
    pub struct Toks { pub toks: Vec<String>, pub pos: usize }
    impl Toks {
        pub fn next(&mut self) -> String {
            if self.pos >= self.toks.len() { std::process::exit(86); }
            self.pos += 1;
            self.toks[self.pos - 1].clone()
        }
    }
    pub trait Rd: Sized { fn rd(t: &mut Toks) -> Self; }
    impl Rd for i64 { fn rd(t: &mut Toks) -> i64 { t.next().parse().unwrap_or(0) } }
    impl Rd for f64 { fn rd(t: &mut Toks) -> f64 { t.next().parse().unwrap_or(0.0) } }
    impl Rd for bool { fn rd(t: &mut Toks) -> bool { t.next() == "1" } }
    impl Rd for String {
        fn rd(t: &mut Toks) -> String {
            let h = t.next();
            let b: Vec<u8> = (1..h.len()).step_by(2).map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap_or(0)).collect();
            String::from_utf8_lossy(&b).into_owned()
        }
    }
    impl<T: Rd> Rd for Vec<T> {
        fn rd(t: &mut Toks) -> Vec<T> { let n = i64::rd(t) as usize; (0..n).map(|_| T::rd(t)).collect() }
    }
    pub trait Wr { fn wr(&self, o: &mut String); }
    impl Wr for i64 { fn wr(&self, o: &mut String) { o.push_str(&self.to_string()); o.push(' '); } }
    impl Wr for f64 { fn wr(&self, o: &mut String) { o.push_str(&format!("{:e}", self)); o.push(' '); } }
    impl Wr for bool { fn wr(&self, o: &mut String) { o.push_str(if *self { "1 " } else { "0 " }); } }
    impl Wr for String {
        fn wr(&self, o: &mut String) {
            o.push('s');
            for b in self.as_bytes() { o.push_str(&format!("{:02x}", b)); }
            o.push(' ');
        }
    }
    impl<T: Wr> Wr for Vec<T> {
        fn wr(&self, o: &mut String) { (self.len() as i64).wr(o); for x in self { x.wr(o); } }
    }
}
"""


def _rust_type(kind: Type) -> str:
    if kind[0] == "list":
        return f"Vec<{_rust_type(kind[1])}>"
    return {"int": "i64", "float": "f64", "bool": "bool", "str": "String"}[kind[0]]


@dataclass(frozen=True)
class RustBuilder:
    def program(self, signature: dict[str, Any], entry_point: str, solution: str) -> str:
        kinds = param_types(signature)
        reads = "".join(
            f"    let tp_a{i}: {_rust_type(k)} = <{_rust_type(k)} as tp_driver::Rd>::rd(&mut tp_t);\n"
            for i, k in enumerate(kinds)
        )
        args = ", ".join(f"tp_a{i}" for i in range(len(kinds)))
        main = (
            "fn main() {\n    let mut tp_s = String::new();\n"
            "    let _ = std::io::Read::read_to_string(&mut std::io::stdin(), &mut tp_s);\n"
            "    let mut tp_t = tp_driver::Toks { toks: tp_s.split_whitespace().map(String::from).collect(), pos: 0 };\n"
            + reads
            + f"    let tp_r: {_rust_type(return_type(signature))} = {entry_point}({args});\n"
            f'    let mut tp_o = String::from("\\n{MARKER}\\n");\n'
            "    tp_driver::Wr::wr(&tp_r, &mut tp_o);\n    tp_o.push('\\n');\n"
            "    let _ = std::io::Write::write_all(&mut std::io::stdout(), tp_o.as_bytes());\n}\n"
        )  # fmt: skip
        return solution.rstrip("\n") + "\n" + _RUST_DRIVER + main

    def declaration(self, signature: dict[str, Any], entry_point: str, body: str = "") -> str:
        params = ", ".join(
            f"{n}: {_rust_type(k)}" for k, n in zip(param_types(signature), param_names(signature), strict=True)
        )
        return f"fn {entry_point}({params}) -> {_rust_type(return_type(signature))} {{\n{indented(body)}}}\n"


BUILDERS = {
    "c": CBuilder(),
    "cpp17": CppBuilder(),
    "cpp20": CppBuilder(),
    "java": managed.JavaBuilder(),
    "csharp": managed.CSharpBuilder(),
    "go": GoBuilder(),
    "rust": RustBuilder(),
}
