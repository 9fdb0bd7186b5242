"""A scripted OpenAI-compatible chat-completions server on loopback.

No paid model can run here, so tests talk to this instead: the real ``openai`` client,
real HTTP, and responses in the chat-completions wire format (``chat.completion`` JSON,
or ``chat.completion.chunk`` server-sent events ending in ``data: [DONE]``). It replies
from a script and records every request body, so a test can see exactly what was sent.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    text: str | None = None
    tool_calls: list[tuple[str, str, str]] = field(default_factory=list)  # id, name, arguments


class FakeOpenAI:
    def __init__(self, replies: list[Reply]) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._json(404, {"error": {"message": "not found"}})
                    return
                fake.requests.append(body)
                if not fake.replies:
                    self._json(500, {"error": {"message": "script exhausted"}})
                    return
                reply = fake.replies.pop(0)
                if body.get("stream"):
                    self._stream(body, reply)
                else:
                    self._json(200, _completion(body, reply))

            def _json(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, body: dict[str, Any], reply: Reply) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for chunk in _chunks(body, reply):
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def _tool_calls(reply: Reply) -> list[dict[str, Any]]:
    return [
        {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
        for i, n, a in reply.tool_calls
    ]


def _completion(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if reply.tool_calls:
        message["tool_calls"] = _tool_calls(reply)
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "fake"),
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if reply.tool_calls else "stop",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def _chunks(body: dict[str, Any], reply: Reply) -> list[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    out = [chunk({"role": "assistant", "content": ""})]
    words = (reply.text or "").split(" ")
    if reply.text:
        out += [chunk({"content": w if i == 0 else " " + w}) for i, w in enumerate(words)]
    for index, (call_id, name, arguments) in enumerate(reply.tool_calls):
        half = len(arguments) // 2
        out.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": arguments[:half]},
                        }
                    ]
                }
            )
        )
        out.append(
            chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[half:]}}]})
        )
    out.append(chunk({}, "tool_calls" if reply.tool_calls else "stop"))
    return out
