"""Domain errors. Every layer (API, UI, importers, commands) turns these into
its own output; the API renders them as {"error": {"code", "message", "details"}}."""

from __future__ import annotations

from typing import Any


class DomainError(Exception):
    code = "error"
    status = 400

    def __init__(self, message: str, *, details: Any = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details if details is not None else {}
        if code:
            self.code = code


class ValidationFailed(DomainError):
    """Input is malformed; `details` maps a field path to a list of messages."""

    code = "invalid"
    status = 400

    @classmethod
    def naming(cls, errors: dict[str, list[str]]) -> ValidationFailed:
        """Every problem of a body in `details`; the message names the first and counts the rest."""
        where, messages = next(iter(errors.items()))
        more = f" ({len(errors) - 1} more problems in details)" if len(errors) > 1 else ""
        return cls(f"{where}: {messages[0]}{more}", details=errors)


class PermissionDenied(DomainError):
    code = "permission_denied"
    status = 403


class NotFound(DomainError):
    code = "not_found"
    status = 404


class InvalidTransition(DomainError):
    code = "invalid_transition"
    status = 409


class Conflict(DomainError):
    code = "conflict"
    status = 409


class TooLarge(DomainError):
    code = "too_large"
    status = 413


class TooBusy(DomainError):
    """The service is at capacity; `retry_after` (seconds) goes out as Retry-After."""

    code = "busy"
    status = 429

    def __init__(self, message: str, *, retry_after: int, details: Any = None) -> None:
        super().__init__(message, details={"retry_after_s": retry_after, **(details or {})})
        self.retry_after = retry_after


class ImmutableVersionError(Exception):
    """Raised by the model guard when code tries to change a saved version."""


class Unavailable(DomainError):
    """Something the platform itself needs is missing (a tool, a service): not the caller's fault."""

    code = "unavailable"
    status = 503
