"""Drivers for the dynamically typed languages: Python, JavaScript, TypeScript, Ruby,
PHP and Lua. Each appends to the solution a small interpreter of the signature's type
descriptors (`"int"`, `["list", "str"]`) that reads the arguments, calls the function
and writes its result, checking each value's type as it goes (`?` for a value of
another type: a Python function that returns a tuple for a list, a JavaScript one
that returns 2.5 for an int). Appended, never prepended: the solution's line numbers
stay its own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from evaluation.sandbox.drivers.value_types import MARKER, Type, indented, param_types, return_type

_PYTHON = """

def __tp_driver():
    import sys as _sys
    toks = _sys.stdin.buffer.read().split()
    pos = [0]

    def nxt():
        if pos[0] >= len(toks):
            _sys.exit(86)
        pos[0] += 1
        return toks[pos[0] - 1].decode()

    def rd(t):
        if t == "int":
            return int(nxt())
        if t == "float":
            return float(nxt())
        if t == "bool":
            return nxt() == "1"
        if t == "str":
            return bytes.fromhex(nxt()[1:]).decode("utf-8")
        return [rd(t[1]) for _ in range(int(nxt()))]

    def wr(t, v, out):
        if t == "int" and type(v) is int:
            out.append(str(v))
        elif t == "float" and type(v) in (int, float):
            out.append(repr(float(v)))
        elif t == "bool" and type(v) is bool:
            out.append("1" if v else "0")
        elif t == "str" and type(v) is str:
            out.append("s" + v.encode("utf-8", "surrogatepass").hex())
        elif isinstance(t, list) and type(v) is list:
            out.append(str(len(v)))
            for item in v:
                wr(t[1], item, out)
        else:
            out.append("?")

    args = [rd(t) for t in __TP_PARAMS__]
    result = __TP_CALL__(*args)
    out = []
    wr(__TP_RETURNS__, result, out)
    _sys.stdout.write("\\n__TP_MARKER__\\n" + " ".join(out) + "\\n")
    _sys.stdout.flush()


__tp_driver()
"""

# Valid JavaScript and, with `--strict false`, valid TypeScript too.
_JAVASCRIPT = """
;(function () {
  var __tpT = require("fs").readFileSync(0, "utf8").split(/\\s+/).filter(function (t) { return t.length > 0; });
  var __tpP = 0;
  function nxt() { if (__tpP >= __tpT.length) { process.exit(86); } return __tpT[__tpP++]; }
  function rd(t) {
    if (t === "int") { return Number(nxt()); }
    if (t === "float") { return Number(nxt()); }
    if (t === "bool") { return nxt() === "1"; }
    if (t === "str") { return Buffer.from(nxt().slice(1), "hex").toString("utf8"); }
    var n = Number(nxt()), v = [];
    for (var i = 0; i < n; i++) { v.push(rd(t[1])); }
    return v;
  }
  function wr(t, v, out) {
    if (t === "int" && typeof v === "bigint") { out.push(v.toString()); }
    else if (t === "int" && typeof v === "number" && Number.isInteger(v)) { out.push(BigInt(v).toString()); }
    else if (t === "float" && typeof v === "number") { out.push(String(v)); }
    else if (t === "bool" && typeof v === "boolean") { out.push(v ? "1" : "0"); }
    else if (t === "str" && typeof v === "string") { out.push("s" + Buffer.from(v, "utf8").toString("hex")); }
    else if (Array.isArray(t) && Array.isArray(v)) {
      out.push(String(v.length));
      for (var i = 0; i < v.length; i++) { wr(t[1], v[i], out); }
    } else { out.push("?"); }
  }
  var __tpArgs = (__TP_PARAMS__).map(rd);
  var __tpOut = [];
  wr(__TP_RETURNS__, (__TP_CALL__ as any).apply(null, __tpArgs), __tpOut);
  process.stdout.write("\\n__TP_MARKER__\\n" + __tpOut.join(" ") + "\\n");
})();
"""

_RUBY = """

$__tp_toks = STDIN.read.split
$__tp_pos = 0
def __tp_next
  exit(86) if $__tp_pos >= $__tp_toks.length
  $__tp_pos += 1
  $__tp_toks[$__tp_pos - 1]
end
def __tp_rd(t)
  return Integer(__tp_next, 10) if t == "int"
  return Float(__tp_next) if t == "float"
  return __tp_next == "1" if t == "bool"
  return [__tp_next[1..]].pack("H*").force_encoding("UTF-8") if t == "str"
  Array.new(Integer(__tp_next, 10)) { __tp_rd(t[1]) }
end
def __tp_wr(t, v, out)
  if t == "int" && v.is_a?(Integer) then out << v.to_s
  elsif t == "float" && (v.is_a?(Float) || v.is_a?(Integer)) then out << Float(v).to_s
  elsif t == "bool" && (v == true || v == false) then out << (v ? "1" : "0")
  elsif t == "str" && v.is_a?(String) then out << "s" + v.dup.force_encoding("BINARY").unpack1("H*")
  elsif t.is_a?(Array) && v.is_a?(Array)
    out << v.length.to_s
    v.each { |item| __tp_wr(t[1], item, out) }
  else out << "?"
  end
end
__tp_args = (__TP_PARAMS__).map { |t| __tp_rd(t) }
__tp_out = []
__tp_wr(__TP_RETURNS__, method(:__TP_CALL__).call(*__tp_args), __tp_out)
STDOUT.write("\\n__TP_MARKER__\\n" + __tp_out.join(" ") + "\\n")
STDOUT.flush
"""

# Leaves PHP mode and enters it again: right whether or not the solution closed its `<?php`.
_PHP = """
?><?php
function __tp_next() {
  global $__tp_toks, $__tp_pos;
  if ($__tp_pos >= count($__tp_toks)) { exit(86); }
  return $__tp_toks[$__tp_pos++];
}
function __tp_rd($t) {
  if ($t === "int") { return intval(__tp_next()); }
  if ($t === "float") { return floatval(__tp_next()); }
  if ($t === "bool") { return __tp_next() === "1"; }
  if ($t === "str") { return (string) hex2bin(substr(__tp_next(), 1)); }
  $n = intval(__tp_next()); $v = [];
  for ($i = 0; $i < $n; $i++) { $v[] = __tp_rd($t[1]); }
  return $v;
}
function __tp_wr($t, $v, &$out) {
  if ($t === "int" && is_int($v)) { $out[] = (string) $v; }
  elseif ($t === "float" && (is_float($v) || is_int($v))) { $out[] = sprintf("%.17g", $v); }
  elseif ($t === "bool" && is_bool($v)) { $out[] = $v ? "1" : "0"; }
  elseif ($t === "str" && is_string($v)) { $out[] = "s" . bin2hex($v); }
  elseif (is_array($t) && is_array($v) && array_is_list($v)) {
    $out[] = (string) count($v);
    foreach ($v as $item) { __tp_wr($t[1], $item, $out); }
  } else { $out[] = "?"; }
}
$__tp_toks = preg_split('/\\s+/', (string) stream_get_contents(STDIN), -1, PREG_SPLIT_NO_EMPTY);
$__tp_pos = 0;
$__tp_args = array_map('__tp_rd', __TP_PARAMS__);
$__tp_out = [];
$__tp_result = __TP_CALL__(...$__tp_args);
__tp_wr(__TP_RETURNS__, $__tp_result, $__tp_out);
fwrite(STDOUT, "\\n__TP_MARKER__\\n" . implode(" ", $__tp_out) . "\\n");
"""

_LUA = """
do
  local toks, pos = {}, 1
  for t in io.read("a"):gmatch("%S+") do toks[#toks + 1] = t end
  local function nxt()
    local t = toks[pos]
    if t == nil then os.exit(86) end
    pos = pos + 1
    return t
  end
  local function rd(t)
    if t == "int" then return math.tointeger(tonumber(nxt())) end
    if t == "float" then return tonumber(nxt()) + 0.0 end
    if t == "bool" then return nxt() == "1" end
    if t == "str" then return (nxt():sub(2):gsub("..", function(h) return string.char(tonumber(h, 16)) end)) end
    local n, v = tonumber(nxt()), {}
    for i = 1, n do v[i] = rd(t[2]) end
    return v
  end
  local function wr(t, v, out)
    if t == "int" and math.type(v) == "integer" then out[#out + 1] = string.format("%d", v)
    elseif t == "int" and math.type(v) == "float" and math.tointeger(v) then
      out[#out + 1] = string.format("%d", math.tointeger(v))
    elseif t == "float" and type(v) == "number" then out[#out + 1] = string.format("%.17g", v)
    elseif t == "bool" and type(v) == "boolean" then out[#out + 1] = v and "1" or "0"
    elseif t == "str" and type(v) == "string" then
      out[#out + 1] = "s" .. (v:gsub(".", function(c) return string.format("%02x", c:byte()) end))
    elseif type(t) == "table" and type(v) == "table" then
      out[#out + 1] = tostring(#v)
      for i = 1, #v do wr(t[2], v[i], out) end
    else out[#out + 1] = "?" end
  end
  local params, args = __TP_PARAMS__, {}
  for i = 1, #params do args[i] = rd(params[i]) end
  local out = {}
  wr(__TP_RETURNS__, __TP_CALL__(table.unpack(args, 1, #params)), out)
  io.write("\\n__TP_MARKER__\\n" .. table.concat(out, " ") .. "\\n")
  io.stdout:flush()
end
"""


def _descriptor(kind: Type) -> Any:
    return kind[0] if kind[0] != "list" else ["list", _descriptor(kind[1])]


def _lua_literal(value: Any) -> str:
    if isinstance(value, list):
        return "{" + ", ".join(_lua_literal(item) for item in value) + "}"
    return json.dumps(value)


@dataclass(frozen=True)
class ScriptedBuilder:
    template: str
    literal: Any  # a descriptor as the language writes it
    stub: str  # the declaration, with {name} and {params}
    call: str = "{name}"  # how the driver names the function
    typed: bool = False  # TypeScript: parameters and result carry their types
    sigil: str = ""  # before each parameter's name (PHP's `$`)
    empty: str = ""  # the body of an empty declaration

    def program(self, signature: dict[str, Any], entry_point: str, solution: str) -> str:
        driver = (
            self.template.replace("__TP_PARAMS__", self.literal([_descriptor(k) for k in param_types(signature)]))
            .replace("__TP_RETURNS__", self.literal(_descriptor(return_type(signature))))
            .replace("__TP_CALL__", self.call.format(name=entry_point))
            .replace("__TP_MARKER__", MARKER)
        )
        if not self.typed:
            driver = driver.replace(" as any", "")
        return solution.rstrip("\n") + "\n" + driver

    def declaration(self, signature: dict[str, Any], entry_point: str, body: str = "") -> str:
        names = [self.sigil + param["name"] for param in signature.get("params") or ()]
        body = indented(body) if body else self.empty
        if self.typed:
            types = [_ts_type(kind) for kind in param_types(signature)]
            params = ", ".join(f"{n}: {t}" for n, t in zip(names, types, strict=True))
            returns = _ts_type(return_type(signature))
            return self.stub.format(name=entry_point, params=params, returns=returns, body=body)
        return self.stub.format(name=entry_point, params=", ".join(names), body=body)


def _ts_type(kind: Type) -> str:
    if kind[0] == "list":
        return f"{_ts_type(kind[1])}[]"
    return {"int": "number", "float": "number", "bool": "boolean", "str": "string"}[kind[0]]


_JSON = json.dumps
BUILDERS = {
    "python": ScriptedBuilder(_PYTHON, _JSON, "def {name}({params}):\n{body}", empty="    ...\n"),
    "javascript": ScriptedBuilder(_JAVASCRIPT, _JSON, "function {name}({params}) {{\n{body}}}\n"),
    "typescript": ScriptedBuilder(
        _JAVASCRIPT, _JSON, "function {name}({params}): {returns} {{\n{body}}}\n", typed=True
    ),
    "ruby": ScriptedBuilder(_RUBY, _JSON, "def {name}({params})\n{body}end\n"),
    "php": ScriptedBuilder(_PHP, _JSON, "<?php\nfunction {name}({params}) {{\n{body}}}\n", sigil="$"),
    "lua": ScriptedBuilder(_LUA, _lua_literal, "function {name}({params})\n{body}end\n"),
}
