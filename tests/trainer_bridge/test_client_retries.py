"""The client's transport against a small scripted HTTP server: passing failures
(503, 429 with Retry-After, a dropped connection) are retried with the same
idempotency key, refusals are not, a POST without a key is never sent twice,
and list endpoints are followed page by page."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from trainer_bridge.client import PlatformClient, PlatformError, Retry, retry_after_s

DONE = {"id": "b1", "state": "done", "results": [{"index": 0, "id": "0", "status": "passed", "reward": 1.0}]}


class Script:
    """Answers given in order; what each request carried is kept."""

    def __init__(self, answers: list[Any]) -> None:
        self.answers = answers
        self.seen: list[dict[str, Any]] = []


@pytest.fixture
def server() -> Iterator[tuple[str, Script]]:
    script = Script([])

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            script.seen.append({"method": self.command, "path": self.path,
                                "key": self.headers.get("Idempotency-Key"),
                                "body": json.loads(self.rfile.read(length)) if length else None})  # fmt: skip
            answer = script.answers.pop(0)
            if answer == "drop":
                self.close_connection = True
                self.connection.close()  # no status line at all: the client sees a dropped connection
                return
            status, body, headers = answer
            data = json.dumps(body).encode()
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _answer

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}", script
    finally:
        httpd.shutdown()
        httpd.server_close()


def _client(url: str) -> PlatformClient:
    return PlatformClient(url, "tp_test", timeout_s=5, retry=Retry(attempts=4, base_s=0.01, max_s=0.05))


def test_a_reward_batch_is_retried_under_one_key_through_503_429_and_a_dropped_connection(server):
    url, script = server
    script.answers = [(503, {"error": {}}, {}), (429, {"error": {}}, {"Retry-After": "0"}), "drop", (200, DONE, {})]
    (result,) = _client(url).rewards([("a" * 64, "print(1)")])
    assert result["reward"] == 1.0
    keys = {seen["key"] for seen in script.seen}
    assert len(script.seen) == 4 and len(keys) == 1 and None not in keys  # the same batch, sent four times


def test_a_refusal_is_raised_at_once_with_the_platforms_error(server):
    url, script = server
    body = {"error": {"code": "invalid", "message": "completions[0].version_hash: no", "details": {"x": ["y"]}}}
    script.answers = [(400, body, {})]
    with pytest.raises(PlatformError) as caught:
        _client(url).rewards([("a" * 64, "print(1)")])
    assert (caught.value.status, caught.value.code, caught.value.details) == (400, "invalid", {"x": ["y"]})
    assert len(script.seen) == 1


def test_retries_stop_after_their_number_and_a_post_without_a_key_is_sent_once(server):
    url, script = server
    script.answers = [(503, {"error": {}}, {})] * 4
    with pytest.raises(PlatformError) as caught:
        _client(url).get_json("pools/")
    assert caught.value.status == 503 and len(script.seen) == 4
    script.seen.clear()
    script.answers = [(503, {"error": {}}, {})]
    with pytest.raises(PlatformError):
        _client(url).register_job(name="x", snapshot="s")  # not idempotent: never sent twice
    assert len(script.seen) == 1


def test_lists_are_followed_page_by_page(server):
    url, script = server
    script.answers = [(200, {"results": [1, 2], "next": f"{url}/api/v1/tasks/?page=2"}, {}),
                      (200, {"results": [3], "next": None}, {})]  # fmt: skip
    assert list(_client(url).paginate("tasks/")) == [1, 2, 3]
    assert [seen["path"] for seen in script.seen] == ["/api/v1/tasks/", "/api/v1/tasks/?page=2"]


# -- Retry-After ---------------------------------------------------------------------------------

NOW = datetime(2015, 10, 21, 7, 28, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("header", "seconds"),
    [("120", 120.0), (" 7 ", 7.0), ("0", 0.0), ("1.5", 1.5), ("-3", 0.0),
     ("Wed, 21 Oct 2015 07:28:30 GMT", 30.0),  # IMF-fixdate, the form servers send
     ("Wednesday, 21-Oct-15 07:29:00 GMT", 60.0), ("Wed Oct 21 07:28:05 2015", 5.0),  # the obsolete forms
     ("Wed, 21 Oct 2015 07:27:00 GMT", 0.0),  # a date already passed: go now
     (None, None), ("", None), ("soon", None), ("nan", None), ("Wed, 99 Oct 2015 07:28:30 GMT", None)],
)  # fmt: skip
def test_retry_after_is_read_as_seconds_or_an_http_date(header, seconds):
    assert retry_after_s(header, now=NOW) == seconds


def test_the_pause_is_what_retry_after_asks_at_most_max_s_and_jitter_without_one():
    retry = Retry(attempts=4, base_s=0.25, max_s=10.0)
    assert retry.pause(1, "3") == 3.0
    assert retry.pause(1, "3600") == 10.0  # capped
    assert retry.pause(1, format_datetime(datetime.now(UTC) + timedelta(days=1), usegmt=True)) == 10.0
    assert retry.pause(1, "Thu, 01 Jan 1970 00:00:00 GMT") == 0.0
    pauses = [retry.pause(2, "garbage") for _ in range(200)]  # full jitter: uniform up to 0.25 * 2**2
    assert all(0 <= p <= 1.0 for p in pauses) and max(pauses) > 0.5 and len(set(pauses)) > 100


@pytest.mark.parametrize(
    ("header", "low", "high"),
    [("2", 2.0, 2.0), ("in-the-date", 3.0, 6.0), ("Thu, 01 Jan 1970 00:00:00 GMT", 0.0, 0.0), ("soon", 0.0, 0.02)],
)
def test_a_429s_retry_after_sets_the_clients_wait(server, monkeypatch, header, low, high):
    url, script = server
    if header == "in-the-date":  # whole seconds: 6 s ahead, less the time since this second began
        header = format_datetime(datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=6), usegmt=True)
    waits: list[float] = []
    monkeypatch.setattr(time, "sleep", waits.append)
    script.answers = [(429, {"error": {}}, {"Retry-After": header}), (200, {"results": [], "next": None}, {})]
    client = PlatformClient(url, "tp_test", timeout_s=5, retry=Retry(attempts=4, base_s=0.01, max_s=30.0))
    assert list(client.paginate("pools/")) == []
    assert len(waits) == 1 and low <= waits[0] <= high, waits
