"""JSON logs: one parseable object a line, extras and exceptions kept, the execution
line not encoded twice; chosen by LOG_FORMAT, json by default in production."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from config.ops.logs import JsonFormatter
from evaluation.sandbox import counters

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def json_log():
    """(logger, stream, handler): a logger of its own writing JSON lines into `stream`."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("tests.ops.json")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield logger, stream, handler
    finally:
        logger.removeHandler(handler)


def _lines(stream: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_a_line_is_one_json_object_with_its_extras(json_log):
    logger, stream, _ = json_log
    logger.info("reward batch %s done", 12, extra={"batch": 12, "items": [1, 2], "when": object(), "level": "x"})
    (line,) = _lines(stream)
    assert line["message"] == "reward batch 12 done"
    assert line["level"] == "INFO" and line["logger"] == "tests.ops.json"
    assert line["time"].endswith("+00:00")
    assert line["batch"] == 12 and line["items"] == [1, 2]
    assert line["when"].startswith("<object object")  # what JSON cannot hold is written as text
    assert line["field_level"] == "x"  # an extra never replaces the line's own fields


def test_an_exception_is_kept_in_the_same_line(json_log):
    logger, stream, _ = json_log
    try:
        1 / 0  # noqa: B018
    except ZeroDivisionError:
        logger.exception("scoring failed\nwith a second line", extra={"verification": 5})
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1  # newlines in the message and traceback stay inside the JSON string
    line = json.loads(lines[0])
    assert line["level"] == "ERROR" and line["verification"] == 5
    assert "Traceback" in line["exception"] and "ZeroDivisionError: division by zero" in line["exception"]


def test_the_execution_line_is_flat_in_json_and_json_text_in_plain_logs(json_log, caplog):
    _, stream, handler = json_log
    runs = logging.getLogger("evaluation.runs")
    runs.addHandler(handler)
    line = {"event": "execution", "backend": "bwrap", "status": "passed", "wall_s": 0.01, "anomaly": ""}
    try:
        with caplog.at_level("INFO", logger="evaluation.runs"):
            counters.record_execution(line)
    finally:
        runs.removeHandler(handler)
    (logged,) = _lines(stream)
    assert logged["message"] == "execution"
    assert logged["backend"] == "bwrap" and logged["status"] == "passed" and logged["wall_s"] == 0.01
    assert "json_fields" not in logged
    # The plain message is still the line's JSON text (what replay and the plain format read).
    assert json.loads(caplog.records[-1].getMessage()) == line


def _python(code: str, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "LOG_FORMAT", "DJANGO_DEBUG"}}
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**base, "DJANGO_SETTINGS_MODULE": "config.settings", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


LOG_A_LINE = (
    "import django, logging; django.setup(); from django.conf import settings;"
    "print(settings.LOG_FORMAT); logging.getLogger('platform.check').warning('hello', extra={'k': 1})"
)


def test_production_settings_log_json_and_embedded_ones_plain(tmp_path):
    production = _python(LOG_A_LINE, SECRET_KEY="p" * 60, PLATFORM_VAR_DIR=str(tmp_path))
    assert production.returncode == 0, production.stderr
    assert production.stdout.strip() == "json"
    line = json.loads(production.stderr.strip().splitlines()[-1])
    assert line["message"] == "hello" and line["k"] == 1 and line["level"] == "WARNING"

    embedded = _python(LOG_A_LINE, PLATFORM_VAR_DIR=str(tmp_path))
    assert embedded.stdout.strip() == "plain"
    assert embedded.stderr.strip().splitlines()[-1].endswith("WARNING platform.check: hello")

    forced = _python(LOG_A_LINE, LOG_FORMAT="json", PLATFORM_VAR_DIR=str(tmp_path))
    assert forced.stdout.strip() == "json"


def test_an_unknown_log_format_is_a_clear_error(tmp_path):
    out = _python(LOG_A_LINE, LOG_FORMAT="xml", PLATFORM_VAR_DIR=str(tmp_path))
    assert out.returncode != 0 and "LOG_FORMAT='xml'" in out.stderr
