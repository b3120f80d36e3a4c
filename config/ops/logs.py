"""One JSON object a line, for log shippers (LOG_FORMAT=json; the default in production).

Every line has `time` (UTC, ISO 8601), `level`, `logger` and `message`; the fields a
call passes as `extra=` follow under their own names, and `exception` holds the
formatted traceback when there is one. A record may carry `json_fields` (a mapping):
its fields go into the object directly, and its `event` (if any) becomes the message.
That is how a line that is already structured (the per-execution line of
evaluation.runs) stays one flat object instead of JSON text inside a JSON string.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

# What every LogRecord has; anything else on a record came from `extra=`.
_RECORD_ATTRIBUTES = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {
    "message",
    "asctime",
    "taskName",
    "json_fields",
}
_OWN_KEYS = frozenset({"time", "level", "logger", "message", "exception", "stack"})


class JsonFormatter(logging.Formatter):
    """Formats a record as one line of JSON; never raises on values JSON cannot hold
    (they are written as their str())."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
        }
        fields = getattr(record, "json_fields", None)
        if isinstance(fields, Mapping):
            line["message"] = str(fields.get("event", ""))
            _merge(line, fields)
        else:
            line["message"] = record.getMessage()
        _merge(line, {k: v for k, v in vars(record).items() if k not in _RECORD_ATTRIBUTES})
        if record.exc_info and not record.exc_text:
            # Cached on the record as logging.Formatter does, so other handlers reuse it.
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line["exception"] = record.exc_text
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return json.dumps(line, default=str, ensure_ascii=False)


def _merge(line: dict[str, Any], fields: Mapping[str, Any]) -> None:
    """Add `fields` to `line`; a field that would replace one of the line's own keys
    (time, level, ...) is kept as `field_<name>` instead of being lost."""
    for key, value in fields.items():
        name = str(key)
        line[f"field_{name}" if name in _OWN_KEYS else name] = value
