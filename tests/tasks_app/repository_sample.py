"""The sample repository task (tests/tasks_app/repository_sample/) in every form the
platform reads: archive members, zip, tar.gz, raw content, a native JSONL object."""

from __future__ import annotations

import base64
import io
import json
import tarfile
import zipfile
from pathlib import Path
from typing import Any

SAMPLE_DIR = Path(__file__).parent / "repository_sample"
EXECUTABLES = {"repo/scripts/run_tests.sh"}  # git may not keep the bit in every checkout


def members() -> dict[str, bytes]:
    """Archive member name -> bytes, in the documented layout."""
    return {
        path.relative_to(SAMPLE_DIR).as_posix(): path.read_bytes()
        for path in sorted(SAMPLE_DIR.rglob("*"))
        if path.is_file()
    }


def task_meta() -> dict[str, Any]:
    return json.loads((SAMPLE_DIR / "task.json").read_text())


def zip_bytes(entries: dict[str, bytes] | None = None, *, executables: set[str] = EXECUTABLES) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in (entries if entries is not None else members()).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o100755 if name in executables else 0o100644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return out.getvalue()


def tar_bytes(
    entries: dict[str, bytes] | None = None, *, gz: bool = True, prefix: str = "", executables: set[str] = EXECUTABLES
) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz" if gz else "w") as archive:
        for name, data in (entries if entries is not None else members()).items():
            info = tarfile.TarInfo(prefix + name)
            info.size = len(data)
            info.mode = 0o755 if name in executables else 0o644
            archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _file_entry(name: str, data: bytes) -> Any:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}
    return {"text": text, "executable": True} if name in EXECUTABLES else text


def content_data(**overrides: Any) -> dict[str, Any]:
    """The sample as raw version content (the JSONL `version` object), with overrides."""
    meta, files = task_meta(), members()
    tree = {n[len("repo/") :]: d for n, d in files.items() if n.startswith("repo/")}
    hidden = {n[len("hidden_tests/") :]: d.decode() for n, d in files.items() if n.startswith("hidden_tests/")}
    repository = {
        "files": {path: _file_entry(f"repo/{path}", data) for path, data in tree.items()},
        "hidden_test_files": hidden,
        "setup_commands": meta["setup_commands"],
        "fail_to_pass": meta["fail_to_pass"],
        "pass_to_pass": meta["pass_to_pass"],
    }
    repository.update(overrides.pop("repository", {}))
    data = {
        "statement": meta["statement"],
        "suite_kind": "repository",
        "repository": repository,
        "solutions": [
            {"role": "reference", "label": "reference", "code": files["patches/reference.diff"].decode()},
            {
                "role": "adversarial",
                "label": "special-cases",
                "code": files["patches/adversarial/special-cases.diff"].decode(),
            },
        ],
    }
    data.update(overrides)
    return data


def native_object(**overrides: Any) -> dict[str, Any]:
    meta = task_meta()
    return {
        "format": "taskplatform.task/v1",
        "slug": meta["slug"],
        "title": meta["title"],
        "tags": meta["tags"],
        "version": content_data(**overrides),
    }
