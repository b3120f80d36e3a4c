"""The content of a task version: validation, normalisation, canonical form, hash.

Every way content enters the platform (UI form, REST API, importers, the
sample catalogue) goes through `VersionContent.parse`, so the same input gets
the same errors and the same SHA-256 everywhere.
"""

from __future__ import annotations

import ast
import hashlib
import keyword
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from tasks_app.canonical import canonical_json
from tasks_app.errors import ValidationFailed
from tasks_app.function_signatures import KIND as FUNCTION_CALLS
from tasks_app.function_signatures import RESERVED, parse_case, parse_signature
from tasks_app.generated_tests import check_precondition, parse_generated_tests
from tasks_app.languages import LANGUAGES, PYTHON, language_problem, parse_comparator
from tasks_app.python_source import compile_error, top_level_names
from tasks_app.repository.content import REPOSITORY_KIND, RepositoryContent, check_patches, parse_repository
from tasks_app.test_generators import parse_test_generator

HASH_SCHEME = "taskversion/v1"

# The kinds whose content is one program judged by a suite; `repository` is a project
# an agent edits (tasks_app/repository/), judged by the session engine.
PROGRAM_SUITE_KINDS = ("assertions", "check_function", "pytest", "stdio", FUNCTION_CALLS)
SUITE_KINDS = (*PROGRAM_SUITE_KINDS, REPOSITORY_KIND)
SOLUTION_ROLES = ("reference", "adversarial")
SOLUTION_FIELDS = ("role", "label", "code", "note")
STDIO_CASE_FIELDS = ("input", "output")

DEFAULT_TIME_LIMIT_S = 10.0
DEFAULT_MEMORY_LIMIT_MB = 256
MAX_TIME_LIMIT_S = 600.0
MIN_MEMORY_LIMIT_MB = 16
MAX_MEMORY_LIMIT_MB = 16384
MAX_LABEL_CHARS = 100

CONTENT_FIELDS = (
    "statement",
    "language",
    "entry_point",
    "starter_code",
    "suite_kind",
    "test_setup",
    "visible_tests",
    "hidden_tests",
    "solutions",
    "time_limit_s",
    "memory_limit_mb",
    "repository",
    "precondition",
    "generated_tests",
    "comparator",
    "test_generator",
    "signature",
)


@dataclass(frozen=True)
class SolutionContent:
    role: str
    label: str
    code: str
    note: str = ""

    def canonical(self) -> dict[str, str]:
        return {"role": self.role, "label": self.label, "code": self.code, "note": self.note}


@dataclass(frozen=True)
class VersionContent:
    statement: str
    suite_kind: str
    hidden_tests: list[Any]
    entry_point: str = ""
    language: str = "python"
    starter_code: str = ""
    test_setup: str = ""
    visible_tests: list[Any] = field(default_factory=list)
    solutions: tuple[SolutionContent, ...] = ()
    time_limit_s: float = DEFAULT_TIME_LIMIT_S
    memory_limit_mb: int = DEFAULT_MEMORY_LIMIT_MB
    repository: RepositoryContent | None = None
    # Source defining precondition(*args) over the entry point's arguments: generated inputs
    # it rejects are invalid (call suite kinds only).
    precondition: str = ""
    generated_tests: list[dict[str, Any]] = field(default_factory=list)
    comparator: dict[str, Any] = field(default_factory=dict)  # stdio: how output is compared (languages.py)
    # stdio: a generator of test inputs and its validator (test_generators.py); {} for none.
    test_generator: dict[str, Any] = field(default_factory=dict)
    # function_calls: the function's parameters and result, typed for every language
    # (function_signatures.py); {} for the other kinds.
    signature: dict[str, Any] = field(default_factory=dict)

    # -- construction -------------------------------------------------------------

    @classmethod
    def parse(cls, data: Any, *, prefix: str = "") -> VersionContent:
        """Validate raw input (decoded JSON, form data) and return normalised content.

        Raises ValidationFailed whose details map each offending field path
        (e.g. ``solutions[1].code``) to its messages; nothing is partially accepted.
        """
        return _Parser(prefix).parse(data)

    @classmethod
    def from_version(cls, version: Any) -> VersionContent:
        """Content of a saved TaskVersion (trusted: it was validated on the way in)."""
        return cls(
            statement=version.statement,
            suite_kind=version.suite_kind,
            hidden_tests=list(version.hidden_tests),
            entry_point=version.entry_point,
            language=version.language,
            starter_code=version.starter_code,
            test_setup=version.test_setup,
            visible_tests=list(version.visible_tests),
            solutions=tuple(
                SolutionContent(role=s.role, label=s.label, code=s.code, note=s.note) for s in version.solutions.all()
            ),
            time_limit_s=float(version.time_limit_s),
            memory_limit_mb=int(version.memory_limit_mb),
            repository=RepositoryContent.from_stored(version.repository) if version.repository else None,
            precondition=version.precondition,
            generated_tests=list(version.generated_tests),
            comparator=dict(version.comparator or {}),
            test_generator=dict(version.test_generator or {}),
            signature=dict(version.signature or {}),
        )

    # -- canonical form ----------------------------------------------------------

    def canonical(self) -> dict[str, Any]:
        """A plain-data form whose JSON is the same for the same content.

        Solutions are sorted by (role, label): their order carries no meaning.
        Test order is kept: a curator may order cases from easy to hard.
        The `repository` key exists only for repository tasks, and `precondition` and
        `generated_tests` only when set, so the canonical form, and the hash, of every
        version made before them is what it always was.
        """
        canonical = {
            "statement": self.statement,
            "language": self.language,
            "entry_point": self.entry_point,
            "starter_code": self.starter_code,
            "suite_kind": self.suite_kind,
            "test_setup": self.test_setup,
            "visible_tests": self.visible_tests,
            "hidden_tests": self.hidden_tests,
            "solutions": [s.canonical() for s in self.sorted_solutions()],
            "time_limit_s": float(self.time_limit_s),
            "memory_limit_mb": int(self.memory_limit_mb),
        }
        if self.repository is not None:
            canonical["repository"] = self.repository.canonical()
        if self.precondition:
            canonical["precondition"] = self.precondition
        if self.generated_tests:
            canonical["generated_tests"] = self.generated_tests
        if self.comparator:
            canonical["comparator"] = self.comparator
        if self.test_generator:
            canonical["test_generator"] = self.test_generator
        if self.signature:
            canonical["signature"] = self.signature
        return canonical

    def sorted_solutions(self) -> list[SolutionContent]:
        return sorted(self.solutions, key=lambda s: (s.role, s.label))

    def content_hash(self) -> str:
        return content_hash(self.canonical())

    def has_reference(self) -> bool:
        return any(s.role == "reference" for s in self.solutions)


def content_hash(canonical: dict[str, Any]) -> str:
    payload = f"{HASH_SCHEME}\n{canonical_json(canonical)}".encode()
    return hashlib.sha256(payload).hexdigest()


# -- validation -----------------------------------------------------------------


class _Parser:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.errors: dict[str, list[str]] = {}

    def error(self, path: str, message: str) -> None:
        self.errors.setdefault(f"{self.prefix}{path}", []).append(message)

    # Strings --------------------------------------------------------------------

    def text(
        self, data: dict, name: str, *, limit: int, required: bool = False, default: str = "", path: str = ""
    ) -> str:
        path = path or name
        if name not in data or data[name] is None:
            if required:
                self.error(path, "This field is required.")
            return default
        return self.string_value(data[name], path, limit=limit, required=required)

    def string_value(
        self, value: Any, path: str, *, limit: int, required: bool = False, exact_newlines: bool = False
    ) -> str:
        if not isinstance(value, str):
            self.error(path, f"Expected a string, got {_type_name(value)}.")
            return ""
        if "\x00" in value:
            self.error(path, "Contains a NUL character (\\x00), which is not allowed in text.")
            return ""
        size = len(value.encode("utf-8", "surrogatepass"))
        if size > limit:
            self.error(path, f"Too long: {size} bytes, the limit is {limit} bytes.")
            return ""
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            self.error(path, "Contains an unpaired surrogate; text must be valid Unicode.")
            return ""
        if not exact_newlines:  # a patch keeps its CRLFs: they must match the tree's bytes
            value = value.replace("\r\n", "\n")
        if required and not value.strip():
            self.error(path, "This field may not be blank.")
        return value

    def code(self, value: Any, path: str, *, must_parse: bool, exact_newlines: bool = False) -> str:
        source = self.string_value(value, path, limit=settings.TASKS_MAX_CODE_BYTES, exact_newlines=exact_newlines)
        if source and must_parse:
            problem = compile_error(source)
            if problem:
                self.error(path, problem)
        return source

    # The whole version ------------------------------------------------------------

    def parse(self, data: Any) -> VersionContent:
        if not isinstance(data, dict):
            raise ValidationFailed(
                f"Expected an object with the version's fields, got {_type_name(data)}.",
                details={self.prefix.rstrip(".") or "content": [f"Expected an object, got {_type_name(data)}."]},
            )
        unknown = sorted(set(data) - set(CONTENT_FIELDS))
        for name in unknown:
            self.error(name, f"Unknown field. Allowed fields: {', '.join(CONTENT_FIELDS)}.")

        code_limit = settings.TASKS_MAX_CODE_BYTES
        statement = self.text(data, "statement", limit=settings.TASKS_MAX_STATEMENT_BYTES, required=True)
        language = self.choice(data, "language", LANGUAGES, default=PYTHON)
        suite_kind = self.choice(data, "suite_kind", SUITE_KINDS, default=None)
        if language and suite_kind and (problem := language_problem(language, suite_kind)):
            self.error("language", problem)
        repo_kind = suite_kind == REPOSITORY_KIND
        entry_point = self.text(data, "entry_point", limit=200).strip()
        if entry_point and (not entry_point.isidentifier() or keyword.iskeyword(entry_point)):
            self.error("entry_point", f"{entry_point!r} is not a valid Python identifier.")
        elif not entry_point and suite_kind and suite_kind not in ("stdio", REPOSITORY_KIND):
            self.error("entry_point", f"Required for suite kind {suite_kind!r}: the function the tests call.")
        elif suite_kind == FUNCTION_CALLS and (entry_point.lower() in RESERVED or entry_point.lower() == "main"):
            self.error("entry_point", f"{entry_point!r} is reserved in some language here (or is the driver's "
                                      "`main`); choose another name.")  # fmt: skip
        signature = parse_signature(data.get("signature"), suite_kind or "", language, self.error)
        starter_code = self.text(data, "starter_code", limit=code_limit)
        raw_setup = data.get("test_setup")
        test_setup = self.code("" if raw_setup is None else raw_setup, "test_setup", must_parse=True)
        visible = self.tests(data, "visible_tests", suite_kind, required=False, signature=signature)
        hidden = self.tests(data, "hidden_tests", suite_kind, required=not repo_kind, signature=signature)
        # An invalid entry point is reported once, not again for every reference.
        checked_entry = "" if f"{self.prefix}entry_point" in self.errors else entry_point
        solutions = self.solutions(data.get("solutions", []), checked_entry, suite_kind, language != PYTHON)
        time_limit = self.number(data, "time_limit_s", DEFAULT_TIME_LIMIT_S, 0.0, MAX_TIME_LIMIT_S, integer=False)
        memory = self.number(
            data, "memory_limit_mb", DEFAULT_MEMORY_LIMIT_MB, MIN_MEMORY_LIMIT_MB, MAX_MEMORY_LIMIT_MB, integer=True
        )
        repository = self.repository(data, suite_kind, solutions)
        raw_precondition = data.get("precondition")
        raw_precondition = self.code("" if raw_precondition is None else raw_precondition, "precondition",
                                     must_parse=True)  # fmt: skip
        precondition = check_precondition(raw_precondition, suite_kind or "", code_limit,
                                          lambda src: "precondition" in top_level_names(src), self.error)  # fmt: skip
        generated = parse_generated_tests(data.get("generated_tests"), len(hidden), self.error, _type_name)
        comparator = parse_comparator(data.get("comparator"), suite_kind or "", self.error)
        test_generator = parse_test_generator(data.get("test_generator"), suite_kind or "", comparator, self.error)

        if self.errors:
            count = sum(len(v) for v in self.errors.values())
            first_path, first_messages = next(iter(self.errors.items()))
            raise ValidationFailed(
                f"The version has {count} problem(s); first: {first_path}: {first_messages[0]}",
                details=self.errors,
            )
        return VersionContent(
            statement=statement,
            language=language,
            entry_point=entry_point,
            starter_code=starter_code,
            suite_kind=suite_kind,
            test_setup=test_setup,
            visible_tests=visible,
            hidden_tests=hidden,
            solutions=tuple(solutions),
            time_limit_s=float(time_limit),
            memory_limit_mb=int(memory),
            repository=repository,
            precondition=precondition,
            generated_tests=generated,
            comparator=comparator,
            test_generator=test_generator,
            signature=signature,
        )

    def repository(self, data: dict, suite_kind: str, solutions: list[SolutionContent]) -> RepositoryContent | None:
        """The tree, tests and protected paths of a repository task; its solutions are
        patches, checked against the tree once everything else is valid (git costs)."""
        if suite_kind != REPOSITORY_KIND:
            if data.get("repository") is not None:
                self.error("repository", "Only for suite kind 'repository'.")
            return None
        for name in ("entry_point", "starter_code", "test_setup"):
            if data.get(name):
                self.error(name, "Not used by repository tasks: the tree holds the code.")
        repo = parse_repository(data.get("repository"), self.error)
        if repo is not None and not self.errors:
            patches = [(f"solutions[{i}].code", s.role, s.code) for i, s in enumerate(solutions)]
            check_patches(repo, patches, self.error)
        return repo

    def choice(self, data: dict, name: str, options: tuple[str, ...], *, default: str | None) -> str:
        value = data.get(name, default)
        if value is None:
            self.error(name, f"This field is required. One of: {', '.join(options)}.")
            return ""
        if value not in options:
            self.error(name, f"Unknown value {value!r}. One of: {', '.join(options)}.")
            return ""
        return value

    def number(self, data: dict, name: str, default: float, low: float, high: float, *, integer: bool) -> float:
        value = data.get(name, default)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.error(name, f"Expected a number, got {_type_name(value)}.")
            return default
        if integer and isinstance(value, float) and not value.is_integer():
            self.error(name, f"Expected a whole number, got {value}.")
            return default
        if value != value or not (low < value <= high if not integer else low <= value <= high):
            bound = f"more than {low:g}" if not integer else f"at least {low:g}"
            self.error(name, f"Must be {bound} and at most {high:g}; got {value}.")
            return default
        return int(value) if integer else float(value)

    # Test suites --------------------------------------------------------------------

    def tests(self, data: dict, name: str, suite_kind: str, *, required: bool, signature: dict[str, Any]) -> list[Any]:
        value = data.get(name, [])
        if value is None:
            value = []
        if not isinstance(value, list):
            self.error(name, f"Expected a list of tests, got {_type_name(value)}.")
            return []
        if suite_kind == REPOSITORY_KIND:
            if value:
                self.error(name, "Not used by repository tasks: tests go in the tree or hidden_test_files.")
            return []
        if required and not value:
            self.error(name, "At least one hidden test is required.")
        if not suite_kind:
            return value
        out: list[Any] = []
        for index, item in enumerate(value):
            path = f"{name}[{index}]"
            if suite_kind == "stdio":
                out.append(self.stdio_case(item, path))
            elif suite_kind == FUNCTION_CALLS:
                out.append(parse_case(item, signature, path, self.error))
            elif suite_kind == "assertions":
                out.append(self.assertion(item, path))
            else:
                out.append(self.test_module(item, path, suite_kind))
        return out

    def stdio_case(self, item: Any, path: str) -> dict[str, str]:
        if not isinstance(item, dict):
            self.error(path, f'Expected an object {{"input": ..., "output": ...}}, got {_type_name(item)}.')
            return {}
        for extra in sorted(set(item) - set(STDIO_CASE_FIELDS)):
            self.error(f"{path}.{extra}", "Unknown field. Allowed fields: input, output.")
        limit = settings.TASKS_MAX_CODE_BYTES
        case = {}
        for key in STDIO_CASE_FIELDS:
            if key not in item:
                self.error(f"{path}.{key}", "This field is required.")
                case[key] = ""
            else:
                case[key] = self.string_value(item[key], f"{path}.{key}", limit=limit)
        return case

    def assertion(self, item: Any, path: str) -> str:
        source = self.code(item, path, must_parse=False)
        if not source:
            if isinstance(item, str):
                self.error(path, "An assertion may not be blank.")
            return source
        problem = compile_error(source)
        if problem:
            self.error(path, problem)
            return source
        body = ast.parse(source).body
        if len(body) != 1 or not isinstance(body[0], ast.Assert):
            self.error(path, "Each test must be exactly one `assert` statement.")
        return source

    def test_module(self, item: Any, path: str, suite_kind: str) -> str:
        source = self.code(item, path, must_parse=True)
        if not source or f"{self.prefix}{path}" in self.errors:
            return source
        names = top_level_names(source)
        if suite_kind == "check_function" and "check" not in names:
            self.error(path, "A check_function test must define `check(candidate)` at top level.")
        if suite_kind == "pytest" and not any(n.startswith(("test", "Test")) for n in names):
            self.error(path, "A pytest module must define at least one `test_*` function or `Test*` class.")
        return source

    # Solutions ------------------------------------------------------------------------

    def solutions(self, value: Any, entry_point: str, suite_kind: str, foreign: bool) -> list[SolutionContent]:
        if not isinstance(value, list):
            self.error("solutions", f"Expected a list of solutions, got {_type_name(value)}.")
            return []
        out: list[SolutionContent] = []
        labels: set[str] = set()
        # A repository task's solutions are diffs, a `foreign` one's another language: not Python.
        patch, python = suite_kind == REPOSITORY_KIND, not foreign and suite_kind != REPOSITORY_KIND
        for index, item in enumerate(value):
            path = f"solutions[{index}]"
            if not isinstance(item, dict):
                self.error(path, f"Expected an object with {', '.join(SOLUTION_FIELDS)}, got {_type_name(item)}.")
                continue
            for extra in sorted(set(item) - set(SOLUTION_FIELDS)):
                self.error(f"{path}.{extra}", f"Unknown field. Allowed fields: {', '.join(SOLUTION_FIELDS)}.")
            role = item.get("role")
            if role not in SOLUTION_ROLES:
                self.error(f"{path}.role", f"Unknown role {role!r}. One of: {', '.join(SOLUTION_ROLES)}.")
            label = self.text(item, "label", limit=MAX_LABEL_CHARS * 4, required=True, path=f"{path}.label").strip()
            if len(label) > MAX_LABEL_CHARS:
                self.error(f"{path}.label", f"At most {MAX_LABEL_CHARS} characters.")
            if label in labels:
                self.error(f"{path}.label", f"Duplicate label {label!r}: labels are unique within a version.")
            labels.add(label)
            if "code" not in item:
                self.error(f"{path}.code", "This field is required.")
            # A wrong solution may be wrong in any way, a syntax error included;
            # a reference must compile and define what the tests call.
            code = self.code(
                item.get("code", ""), f"{path}.code", must_parse=role == "reference" and python, exact_newlines=patch
            )
            if role == "reference" and code and f"{self.prefix}{path}.code" not in self.errors:
                if not code.strip():
                    self.error(f"{path}.code", "A reference solution may not be empty.")
                elif entry_point and python and suite_kind != "stdio" and entry_point not in top_level_names(code):
                    self.error(f"{path}.code", f"The reference does not define `{entry_point}` at top level.")
            note = self.text(item, "note", limit=settings.TASKS_MAX_STATEMENT_BYTES, path=f"{path}.note")
            out.append(SolutionContent(role=role or "", label=label, code=code, note=note))
        return out


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
    }.get(type(value), type(value).__name__)
