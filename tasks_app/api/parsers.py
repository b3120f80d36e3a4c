from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser, JSONParser

from tasks_app.errors import TooLarge


class RawUploadParser(BaseParser):
    """Hands the raw request body to the view as bytes, for files sent as the body
    itself (JSONL, gzip). DRF streams such bodies past Django's own size check,
    so the import limit is enforced here while reading."""

    media_type = "*/*"

    def parse(self, stream: Any, media_type: str | None = None, parser_context: dict | None = None) -> bytes:
        if stream is None:
            return b""
        limit = settings.TASKS_MAX_IMPORT_FILE_BYTES
        data = stream.read(limit + 1)
        if len(data) > limit:
            raise TooLarge(f"The upload exceeds the import limit of {limit} bytes.", details={"limit_bytes": limit})
        return data


class SafeJSONParser(JSONParser):
    """JSON whose nesting exhausts the parser's recursion is bad input (400), not a crash."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: dict | None = None) -> Any:
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError as exc:
            raise ParseError("JSON parse error - nested too deeply.") from exc


def uploaded_file(request: Any, *, what: str = "the file") -> tuple[bytes, str]:
    """(bytes, filename) of a file sent as multipart field `file` or as the raw body
    (RawUploadParser); ValidationFailed when neither came."""
    from tasks_app.errors import ValidationFailed

    if isinstance(request.data, bytes):
        return request.data, ""
    sent = request.data.get("file") if hasattr(request.data, "get") else None
    if sent is None or isinstance(sent, str):
        raise ValidationFailed(
            f"Send {what} as multipart field 'file' or as the raw body.", details={"file": ["No file was sent."]}
        )
    return sent.read(), sent.name
