"""The client's transport against a small scripted HTTP server: passing failures
(503, 429 with Retry-After, a dropped connection) are retried with the same
idempotency key, refusals are not, a POST without a key is never sent twice,
and list endpoints are followed page by page."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from trainer_bridge.client import PlatformClient, PlatformError, Retry

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
