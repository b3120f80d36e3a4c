"""Any logged execution can be run again from its log line's request digest (`manage.py replay`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from evaluation.sandbox import engine, replay
from evaluation.sandbox.types import Limits, RunRequest

from .conftest import needs_bwrap

PROGRAM = "import random\ndef pick(n):\n    return random.randrange(n)\n"


def _request(seed: int) -> RunRequest:
    tests = {"visible": ["assert pick(10) in range(10)"], "hidden": [f"assert pick(1000) == {i}" for i in range(3)]}
    return RunRequest(suite_kind="assertions", solution=PROGRAM, tests=tests, entry_point="pick",
                      limits=Limits(wall_s=5, cpu_s=5), seed=seed, repeat=1)  # fmt: skip


@needs_bwrap
def test_a_logged_run_replays_to_the_same_result(bwrap_pool, caplog, capsys):
    with caplog.at_level("INFO", logger="evaluation.runs"):
        first = engine.run(_request(seed=11), backend="bwrap", pool=bwrap_pool)
    digest = json.loads(caplog.records[-1].getMessage())["request_digest"]

    assert replay.load(digest) == _request(seed=11)
    call_command("replay", digest, "--backend", "bwrap")  # exits 0
    again = json.loads(capsys.readouterr().out)
    assert again["status"] == str(first.status)
    assert [(t["name"], t["outcome"], t["message"]) for t in again["tests"]] == [
        (t.name, t.outcome, t.message) for t in first.tests
    ]
    assert (again["seed"], again["repeat"], again["hash_seed"]) == (11, 1, first.hash_seed)


def test_a_request_is_kept_once_and_whole(tmp_path, monkeypatch):
    monkeypatch.setenv("SANDBOX_REPLAY_DIR", str(tmp_path))
    body = replay.request_body(_request(seed=2))
    digest = replay.digest_of(body)
    path = replay.store(body, digest)
    assert path == replay.store(body, digest)  # the same request is the same file
    assert [p.name for p in tmp_path.rglob("*") if p.is_file()] == [f"{digest}.json"]
    assert replay.digest_of(json.loads(Path(path).read_bytes())) == digest


def test_bad_digests_and_altered_records_are_refused_clearly(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SANDBOX_REPLAY_DIR", str(tmp_path))
    with pytest.raises(replay.NotRecorded, match="not a request digest"):
        replay.load("../../etc/passwd")
    with pytest.raises(replay.NotRecorded, match="no request"):
        replay.load("a" * 64)
    body = replay.request_body(_request(seed=3))
    digest = replay.digest_of(body)
    path = replay.store(body, digest)
    path.write_text(path.read_text().replace("randrange", "randint"))
    with pytest.raises(replay.NotRecorded, match="altered"):
        replay.load(digest)
    with pytest.raises(CommandError, match="not a request digest") as refused:
        call_command("replay", "nothex")
    assert refused.value.returncode == 2
    monkeypatch.setenv("SANDBOX_REPLAY_DIR", "off")
    assert replay.store(body, digest) is None
    with pytest.raises(replay.NotRecorded, match="off"):
        replay.load(digest)


def test_manage_py_replay_exits_2_and_says_why_for_a_digest_with_no_record(tmp_path):
    """The command line as docs/sandbox.md shows it: status 2 and the reason on stderr."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "SANDBOX_REPLAY_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "manage.py", "replay", "a" * 64], cwd=root, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert f"no request {'a' * 64} under {tmp_path}" in done.stderr
    assert done.stdout == ""
