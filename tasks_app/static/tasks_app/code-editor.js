// Highlighting in the task form's code fields, as the curator types.
//
// Each <textarea class="code"> stays the real field: the form posts it, a screen
// reader reads it, and without this script it is a plain text area. Behind it a
// <pre aria-hidden="true"> shows the same text in coloured spans (the classes of
// tasks_app/highlighting.py, so the version page and the form look alike); the
// textarea's own text is transparent, its caret and selection are not. The
// language is the form's `language` field (the checker's, for the checker source);
// the test fields are Python unless the task reads standard input.
(() => {
  "use strict";

  const C_LIKE = "auto break case char const continue default do double else enum extern float for goto if " +
    "inline int long register return short signed sizeof static struct switch typedef union unsigned void " +
    "volatile while bool true false nullptr NULL";
  const KEYWORDS = {
    python: "False None True and as assert async await break class continue def del elif else except finally " +
      "for from global if import in is lambda nonlocal not or pass raise return try while with yield",
    c: C_LIKE,
    cpp: C_LIKE + " class namespace template typename using public private protected virtual new delete this " +
      "throw try catch operator constexpr noexcept std",
    java: "abstract boolean break byte case catch char class continue default do double else enum extends " +
      "final finally float for if implements import instanceof int interface long new package private " +
      "protected public return short static super switch this throw throws try void while var true false null",
    javascript: "async await break case catch class const continue default delete do else export extends " +
      "false finally for function if import in instanceof let new null of return super switch this throw " +
      "true try typeof undefined var void while yield require",
    go: "break case chan const continue default defer else fallthrough for func go goto if import interface " +
      "map package range return select struct switch type var true false nil int int64 string bool byte rune",
    rust: "as break const continue crate else enum extern false fn for if impl in let loop match mod move mut " +
      "pub ref return self Self static struct super trait true type unsafe use where while i32 i64 u32 u64 " +
      "usize f64 bool String Vec",
    ruby: "alias and begin break case class def defined? do else elsif end ensure false for if in module next " +
      "nil not or redo rescue retry return self super then true undef unless until when while yield puts",
    php: "abstract and array as break case catch class const continue declare default do echo else elseif " +
      "empty endfor endforeach endif endwhile extends false final for foreach function global if implements " +
      "include instanceof interface isset list new null or print private protected public require return " +
      "static switch throw true try unset use var while",
    lua: "and break do else elseif end false for function goto if in local nil not or repeat return then true " +
      "until while",
    csharp: "abstract as base bool break byte case catch char class const continue decimal default do double " +
      "else enum false finally float for foreach if in int interface internal is long namespace new null " +
      "object out override private protected public readonly ref return sealed short static string struct " +
      "switch this throw true try typeof uint ulong using var virtual void while",
  };
  KEYWORDS.typescript = KEYWORDS.javascript + " interface type enum implements readonly number string boolean any";
  const FAMILY = { cpp17: "cpp", cpp20: "cpp" };
  // Comments, then strings, then numbers, then words: the first that matches at a point wins.
  const HASH_COMMENT = /#[^\n]*/y;
  const SLASH_COMMENT = /\/\/[^\n]*|\/\*[\s\S]*?(?:\*\/|$)/y;
  const DASH_COMMENT = /--\[\[[\s\S]*?(?:\]\]|$)|--[^\n]*/y;
  const COMMENTS = { python: [HASH_COMMENT], ruby: [HASH_COMMENT], php: [SLASH_COMMENT, HASH_COMMENT],
    lua: [DASH_COMMENT] };
  const STRING = /"(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?|`[^`]*`?/y;
  const PYTHON_STRING = /(?:[rRbBfFuU]{0,2})(?:"""[\s\S]*?(?:"""|$)|'''[\s\S]*?(?:'''|$)|"(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?)/y;
  const NUMBER = /\b(?:0[xX][0-9a-fA-F_]+|\d[\d_]*(?:\.\d+)?(?:[eE][+-]?\d+)?)[a-zA-Z]*\b/y;
  const WORD = /[A-Za-z_$][\w$?]*/y;

  function escape(text) {
    return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }

  function highlight(source, language) {
    const family = FAMILY[language] || language;
    const keywords = new Set((KEYWORDS[family] || "").split(" "));
    if (!KEYWORDS[family]) return escape(source);
    const comments = COMMENTS[family] || [SLASH_COMMENT];
    const string = family === "python" ? PYTHON_STRING : STRING;
    let html = "";
    let plain = "";
    let at = 0;
    const flush = () => { html += escape(plain); plain = ""; };
    const take = (pattern) => { pattern.lastIndex = at; const m = pattern.exec(source); return m && m[0] ? m[0] : null; };
    while (at < source.length) {
      let token = null;
      let cls = "";
      for (const comment of comments) {
        token = take(comment);
        if (token) { cls = "hl-c"; break; }
      }
      if (!token && (token = take(string))) cls = "hl-s";
      if (!token && (token = take(NUMBER))) cls = "hl-m";
      if (!token && (token = take(WORD))) cls = keywords.has(token) ? "hl-k" : "";
      if (!token) { plain += source[at]; at += 1; continue; }
      if (cls) { flush(); html += `<span class="${cls}">${escape(token)}</span>`; } else { plain += token; }
      at += token.length;
    }
    flush();
    return html;
  }

  function languageOf(area) {
    const form = area.form;
    const field = (name) => form && form.elements.namedItem(name);
    if (area.name === "checker_source") return (field("checker_language") || {}).value || "python";
    if (area.name === "generator_source") return (field("generator_language") || {}).value || "python";
    if (area.name === "validator_source") return (field("validator_language") || {}).value || "python";
    if (area.name === "starter_code" || /-code$/.test(area.name)) return (field("language") || {}).value || "python";
    if (area.name === "test_setup") return "python";
    const kind = (field("suite_kind") || {}).value;
    return kind === "stdio" ? "" : "python";  // stdio tests are JSON cases, not code
  }

  function enhance(area) {
    if (area.dataset.highlighted) return;
    area.dataset.highlighted = "1";
    const wrapper = document.createElement("div");
    wrapper.className = "code-editor";
    const layer = document.createElement("pre");
    layer.className = "code-layer highlighted";
    layer.setAttribute("aria-hidden", "true");
    const code = document.createElement("code");
    layer.appendChild(code);
    area.parentNode.insertBefore(wrapper, area);
    wrapper.appendChild(layer);
    wrapper.appendChild(area);
    const render = () => {
      const language = languageOf(area);
      code.innerHTML = highlight(area.value, language) + "\n";  // a last empty line keeps its height
      layer.dataset.language = language;
      layer.scrollTop = area.scrollTop;
      layer.scrollLeft = area.scrollLeft;
    };
    area.addEventListener("input", render);
    area.addEventListener("scroll", () => { layer.scrollTop = area.scrollTop; layer.scrollLeft = area.scrollLeft; });
    if (area.form) area.form.addEventListener("change", (event) => {
      if (["language", "checker_language", "generator_language", "validator_language", "suite_kind"].includes(event.target.name)) render();
    });
    render();
  }

  function enhanceAll(root) {
    (root || document).querySelectorAll("textarea.code").forEach(enhance);
  }

  document.addEventListener("DOMContentLoaded", () => enhanceAll(document));
  document.addEventListener("htmx:afterSwap", (event) => enhanceAll(event.target));
  document.addEventListener("htmx:oobAfterSwap", (event) => enhanceAll(event.target));
})();
