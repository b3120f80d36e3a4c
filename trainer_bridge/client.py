"""A Python client for the platform's trainer-facing API: pools and snapshots,
streaming export to a file, training jobs, and rewards.

    client = PlatformClient("http://127.0.0.1:8000", token="tp_...")
    path = client.export(pool="basics", snapshot=HASH, path="basics.jsonl")
    results = client.rewards([(version_hash, completion), ...])

Calls that fail for a passing reason (a dropped connection, a timeout, 502/503/504,
a 429) are retried (by tenacity) with exponential backoff and full jitter, honouring
Retry-After in seconds or as an HTTP date, capped at `Retry.max_s`. A POST is
retried only when repeating it is harmless: reward batches carry an idempotency
key, so a retried batch runs nothing twice.
Completions whose sandbox failed (`sandbox_error`, no reward) are sent again in
a new batch, up to `sandbox_retries` times; they are never scored 0.
"""

from __future__ import annotations

import email.utils
import json
import math
import os
import random
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import requests
import tenacity

if TYPE_CHECKING:
    from trainer_bridge.session_client import AgentSession

RETRY_STATUSES = {429, 502, 503, 504}


class PlatformError(Exception):
    """The platform refused a call; `code`, `message` and `details` are its error body."""

    def __init__(self, status: int, code: str, message: str, details: Any = None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message, self.details = status, code, message, details or {}


class RewardUnavailable(Exception):
    """A completion could not be scored: its sandbox kept failing, or no verdict came
    before the deadline. Never a reason to score it 0."""


class _PassingRefusal(Exception):
    """A 429/502/503/504 on a call that may be repeated: tried again, or raised as
    PlatformError once the tries are spent."""

    def __init__(self, response: requests.Response) -> None:
        super().__init__(response.status_code)
        self.response = response


_PASSING = (requests.ConnectionError, requests.Timeout, _PassingRefusal)


@dataclass(frozen=True)
class Retry:
    attempts: int = 6  # tries in all, for one call
    base_s: float = 0.5
    max_s: float = 30.0

    def pause(self, attempt: int, retry_after: str | None = None) -> float:
        """Seconds to wait after failed try number `attempt` (from 1): what Retry-After
        asks, at most max_s; without a readable one, full jitter."""
        asked = retry_after_s(retry_after)
        if asked is not None:
            return min(self.max_s, asked)
        # Full jitter: uniformly up to the exponential bound, so clients that failed
        # together do not come back together.
        return random.uniform(0, min(self.max_s, self.base_s * 2**attempt))  # noqa: S311 - jitter, not secrets


def retry_after_s(header: str | None, *, now: datetime | None = None) -> float | None:
    """The wait a Retry-After header asks for, in seconds (RFC 9110, 10.2.3): a number
    of seconds, or an HTTP date (0 once it has passed). None when absent or unreadable."""
    if not header or not header.strip():
        return None
    try:
        seconds = float(header)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(header)
        except (TypeError, ValueError, OverflowError):
            return None
        if when.tzinfo is None:  # asctime and "-0000" dates carry no zone; HTTP dates are GMT
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    return None if math.isnan(seconds) else max(0.0, seconds)


class PlatformClient:
    def __init__(
        self,
        base_url: str | None = None,
        token: str | None = None,
        *,
        timeout_s: float = 60.0,
        retry: Retry | None = None,
        http: requests.Session | None = None,
    ) -> None:
        self.base_url = (base_url or os.environ.get("PLATFORM_URL") or "http://127.0.0.1:8000").rstrip("/")
        self.token = token or os.environ.get("PLATFORM_TOKEN") or ""
        self.timeout_s = timeout_s
        self.retry = retry or Retry()
        # `http`, not `session`: client.session(...) opens an agent session (docs/sessions.md).
        self.http = http or requests.Session()
        self.http.headers["Accept"] = "application/json"
        if self.token:
            self.http.headers["Authorization"] = f"Bearer {self.token}"

    # -- transport ---------------------------------------------------------------------------

    def _url(self, path: str) -> str:
        return path if path.startswith("http") else f"{self.base_url}/api/v1/{path.lstrip('/')}"

    def request(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        stream: bool = False,
        retry_post: bool = False,
        timeout_s: float | None = None,
        ok: tuple[int, ...] = (200, 201, 202, 204),
    ) -> requests.Response:
        """One call, retried as the module docstring says; raises PlatformError on a refusal."""
        retriable = method in ("GET", "HEAD", "PUT", "DELETE") or retry_post

        def send() -> requests.Response:
            response = self.http.request(method, self._url(path), json=json_body, params=params, headers=headers,
                                            stream=stream, timeout=timeout_s or self.timeout_s)  # fmt: skip
            if response.status_code in ok:
                return response
            if retriable and response.status_code in RETRY_STATUSES:
                raise _PassingRefusal(response)
            raise _error_of(response)

        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.retry.attempts),
            retry=tenacity.retry_if_exception_type(_PASSING) if retriable else tenacity.retry_never,
            wait=lambda state: self.retry.pause(state.attempt_number, _retry_after_of(state)),
            before_sleep=_close_refused,
            reraise=True,  # the last failure itself, not tenacity's RetryError
        )
        try:
            return retrying(send)
        except _PassingRefusal as refusal:
            raise _error_of(refusal.response) from None

    def get_json(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params=params or None).json()

    def paginate(self, path: str, **params: Any) -> Iterator[Any]:
        """Every item of a list endpoint, following `next` links page by page."""
        body = self.get_json(path, **params)
        while True:
            if isinstance(body, list):
                yield from body
                return
            yield from body.get("results", [])
            if not body.get("next"):
                return
            body = self.request("GET", body["next"]).json()

    # -- agent sessions ------------------------------------------------------------------------

    def session(self, version_hash: str, **options: Any) -> AgentSession:
        """An agent session on a repository task's version: `with client.session(h) as s:`
        then s.execute(action), s.fork(n), s.submit() (trainer_bridge/session_client.py)."""
        from trainer_bridge.session_client import open_session

        return open_session(self, version_hash, **options)

    # -- pools, snapshots, export ----------------------------------------------------------------

    def pools(self) -> list[dict[str, Any]]:
        return list(self.paginate("pools/"))

    def snapshots(self, pool: str) -> list[dict[str, Any]]:
        return list(self.paginate(f"pools/{pool}/snapshots/"))

    def export(self, *, pool: str, snapshot: str, path: str | Path, fmt: str = "jsonl", gzip: bool = False) -> Path:
        """Stream a snapshot's export to `path` (written whole or not at all). A file
        already there from the same snapshot (its ETag kept beside it) is not fetched again."""
        target = Path(path)
        tag_file = target.with_name(target.name + ".etag")
        headers = {"Accept": "*/*"}
        if target.exists() and tag_file.exists():
            headers["If-None-Match"] = tag_file.read_text().strip()
        params = {"format": fmt, **({"gzip": "1"} if gzip else {})}
        # gzip=1 asks for a gzip file on disk: `requests` must not undo it on the way.
        headers["Accept-Encoding"] = "identity"
        response = self.request("GET", f"pools/{pool}/snapshots/{snapshot}/export", params=params, headers=headers,
                                stream=True, ok=(200, 304))  # fmt: skip
        if response.status_code == 304:
            return target
        partial = target.with_name(f".{target.name}.{uuid.uuid4().hex}.part")
        try:
            with partial.open("wb") as out:
                for chunk in response.raw.stream(1 << 20, decode_content=False):
                    out.write(chunk)
            os.replace(partial, target)
        finally:
            response.close()
            partial.unlink(missing_ok=True)
        tag_file.write_text(response.headers.get("ETag", ""))
        return target

    def iter_export(self, *, pool: str, snapshot: str) -> Iterator[dict[str, Any]]:
        """The snapshot's records one at a time, parsed as they stream in (JSONL)."""
        response = self.request("GET", f"pools/{pool}/snapshots/{snapshot}/export", params={"format": "jsonl"},
                                stream=True)  # fmt: skip
        try:
            for line in response.iter_lines():
                if line:
                    yield json.loads(line)
        finally:
            response.close()

    def solutions(self, *, pool: str, snapshot: str, page_size: int = 50) -> Iterator[dict[str, Any]]:
        """Each member's known solutions and mutants with their outcomes (needs a token
        with `export:tests`): what a replay policy answers with."""
        return self.paginate(f"pools/{pool}/snapshots/{snapshot}/solutions", page_size=page_size)

    # -- training jobs ---------------------------------------------------------------------------

    def register_job(self, *, name: str, snapshot: str, reward_mode: str = "binary", **extra: Any) -> dict[str, Any]:
        """Register a job; the answer's `token` (shown once) is the job's own token."""
        return self.request("POST", "jobs", json_body={"name": name, "snapshot": snapshot,
                                                       "reward_mode": reward_mode, **extra}).json()  # fmt: skip

    def job(self, job_id: int) -> dict[str, Any]:
        return self.get_json(f"jobs/{job_id}")

    def set_job_state(self, job_id: int, state: str) -> dict[str, Any]:
        return self.request("PATCH", f"jobs/{job_id}", json_body={"state": state}, retry_post=True).json()

    def post_metrics(self, job_id: int, metrics: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """Per-step metrics; posting a step again replaces it, so a retry is harmless."""
        return self.request("POST", f"jobs/{job_id}/metrics", json_body={"metrics": list(metrics)},
                            retry_post=True).json()  # fmt: skip

    def post_rollouts(self, job_id: int, rollouts: Sequence[dict[str, Any]], *, chunk: int = 5000) -> dict[str, int]:
        """Per-task outcomes; the same sample posted again is skipped, so a retry is harmless."""
        total = {"created": 0, "skipped": 0}
        for start in range(0, len(rollouts), chunk):
            part = {"rollouts": list(rollouts[start : start + chunk])}
            body = self.request("POST", f"jobs/{job_id}/rollouts", json_body=part, retry_post=True).json()
            total["created"] += body["created"]
            total["skipped"] += body["skipped"]
        return total

    # -- rewards ---------------------------------------------------------------------------------

    def reward_batch(
        self,
        completions: Sequence[dict[str, Any]],
        *,
        reward: str | None = None,
        seed: int = 0,
        deadline_s: float = 120.0,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """POST one batch and wait for every verdict (polling past a 202)."""
        key = idempotency_key or uuid.uuid4().hex
        body: dict[str, Any] = {"completions": list(completions), "seed": seed, "deadline_s": deadline_s}
        if reward:
            body["reward"] = reward
        answer = self.request("POST", "rewards", json_body=body, headers={"Idempotency-Key": key}, retry_post=True,
                              timeout_s=deadline_s + 30).json()  # fmt: skip
        waited = 0.0
        while answer["state"] != "done":
            if waited > deadline_s * 2:
                raise RewardUnavailable(f"batch {answer['id']}: no verdict after {waited:.0f} s of waiting")
            started = time.monotonic()
            answer = self.request("GET", f"rewards/{answer['id']}", params={"wait": min(deadline_s, 60)},
                                  timeout_s=min(deadline_s, 60) + 30).json()  # fmt: skip
            waited += time.monotonic() - started
        return answer

    def rewards(
        self,
        items: Iterable[tuple[str, str] | dict[str, Any]],
        *,
        reward: str | None = None,
        seed: int = 0,
        batch_size: int = 16,
        concurrency: int = 4,
        sandbox_retries: int = 2,
        deadline_s: float = 120.0,
    ) -> list[dict[str, Any]]:
        """Score (version_hash, completion) pairs; results in the same order.

        Batches of `batch_size` go out `concurrency` at a time. A `sandbox_error`
        result is sent again (a new batch) up to `sandbox_retries` times; one still
        failing comes back as it is, with no reward, for the caller to leave out."""
        todo = [_as_completion(n, item) for n, item in enumerate(items)]
        results: list[dict[str, Any] | None] = [None] * len(todo)
        for round_ in range(sandbox_retries + 1):
            batches = [todo[i : i + batch_size] for i in range(0, len(todo), batch_size)]
            with ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(batches)))) as pool:
                answers = list(pool.map(lambda b: self.reward_batch(b, reward=reward, seed=seed,
                                                                     deadline_s=deadline_s), batches))  # fmt: skip
            again = []
            for batch, answer in zip(batches, answers, strict=True):
                for sent, result in zip(batch, answer["results"], strict=True):
                    position = int(sent["id"])
                    results[position] = {**result, "id": position}
                    if result["status"] == "sandbox_error" and round_ < sandbox_retries:
                        again.append(sent)
            if not again:
                break
            todo = again
        return [r for r in results if r is not None]


def _as_completion(n: int, item: tuple[str, str] | dict[str, Any]) -> dict[str, Any]:
    if isinstance(item, dict):
        return {"version_hash": item["version_hash"], "completion": item["completion"], "id": str(n)}
    version_hash, completion = item
    return {"version_hash": version_hash, "completion": completion, "id": str(n)}


def _refusal_of(state: tenacity.RetryCallState) -> _PassingRefusal | None:
    failure = state.outcome.exception() if state.outcome else None
    return failure if isinstance(failure, _PassingRefusal) else None


def _retry_after_of(state: tenacity.RetryCallState) -> str | None:
    refusal = _refusal_of(state)
    return refusal.response.headers.get("Retry-After") if refusal else None


def _close_refused(state: tenacity.RetryCallState) -> None:
    refusal = _refusal_of(state)
    if refusal:
        refusal.response.close()  # its connection goes back to the pool during the wait


def _error_of(response: requests.Response) -> PlatformError:
    try:
        error = response.json().get("error", {})
    except ValueError:
        error = {}
    return PlatformError(response.status_code, error.get("code", "error"),
                         error.get("message", response.text[:500]), error.get("details"))  # fmt: skip
