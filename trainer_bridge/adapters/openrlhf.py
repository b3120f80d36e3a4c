"""An OpenRLHF remote reward server: `--remote_rm_url http://HOST:PORT/get_reward`.

OpenRLHF posts {"query": [...], "prompts": [...], "labels": [...]}: each query is
the prompt followed by the response, and with `--label_key version_hash` each
label is the task version's hash. The answer is {"rewards": [...], "scores":
[...], "extra_logs": {...}}. When a sandbox keeps failing the answer is a 503,
which OpenRLHF's client retries, instead of a reward of 0.

    python -m trainer_bridge.adapters.openrlhf --port 5000 [--server URL] [--token T]
"""

from __future__ import annotations

import argparse
import json
import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from trainer_bridge.client import PlatformClient, PlatformError

MAX_BODY = 64 << 20


def response_of(query: str, prompt: str | None) -> str:
    """The policy's response: the query without its prompt in front."""
    if prompt and query.startswith(prompt):
        return query[len(prompt) :]
    return query


def score(client: PlatformClient, body: Any, *, reward: str | None = None) -> tuple[int, dict[str, Any]]:
    """(HTTP status, answer) for one /get_reward body."""
    if not isinstance(body, dict) or not isinstance(body.get("query"), list):
        return 400, {"error": "expected {query: [...], prompts: [...], labels: [...]}"}
    queries, prompts, labels = body["query"], body.get("prompts") or [], body.get("labels") or []
    if len(labels) != len(queries) or (prompts and len(prompts) != len(queries)):
        return 400, {"error": "query, prompts and labels must be lists of one length (labels: version hashes)"}
    pairs = [(str(label), response_of(str(q), prompts[n] if prompts else None))
             for n, (q, label) in enumerate(zip(queries, labels, strict=True))]  # fmt: skip
    try:
        results = client.rewards(pairs, reward=reward)
    except PlatformError as exc:
        return (exc.status if 400 <= exc.status < 500 else 502), {"error": exc.message, "details": exc.details}
    if any(r["reward"] is None for r in results):
        failed = sum(1 for r in results if r["reward"] is None)
        return 503, {"error": f"{failed} completions could not be scored (sandbox_error); retry"}
    rewards = [float(r["reward"]) for r in results]
    passed = [1.0 if r["status"] == "passed" else 0.0 for r in results]
    return 200, {"rewards": rewards, "scores": rewards, "extra_logs": {"passed": passed}}


def make_server(client: PlatformClient, *, host: str = "127.0.0.1", port: int = 5000,
                reward: str | None = None) -> ThreadingHTTPServer:  # fmt: skip
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            if self.path.rstrip("/") != "/get_reward":
                return self._send(404, {"error": f"no endpoint {self.path}; POST /get_reward"})
            length = int(self.headers.get("Content-Length") or 0)
            if not 0 < length <= MAX_BODY:
                return self._send(400 if length <= 0 else 413, {"error": "a JSON body of at most 64 MiB"})
            try:
                body = json.loads(self.rfile.read(length))
            except ValueError as exc:
                return self._send(400, {"error": f"not JSON: {exc}"})
            status, answer = score(client, body, reward=reward)
            return self._send(status, answer)

        def _send(self, status: int, answer: dict[str, Any]) -> None:
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return ThreadingHTTPServer((host, port), Handler)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server", default=os.environ.get("PLATFORM_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--token", default=os.environ.get("PLATFORM_TOKEN", ""))
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=5000)
    parser.add_argument("--reward", choices=["binary", "fraction"], default=None)
    args = parser.parse_args(argv)
    server = make_server(PlatformClient(args.server, args.token), host=args.host, port=args.port, reward=args.reward)
    print(f"OpenRLHF reward server on http://{args.host}:{server.server_port}/get_reward -> {args.server}")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
