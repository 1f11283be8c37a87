"""Fixtures for agent tests: a chat-completions server on loopback that answers from a
script, completion bodies, and runs whose agents.config names a model."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from rsi_master.agents import AgentsSetup, LLMConfig, record_setup
from rsi_master.agents._config import LLM_AGENTS


def completion(
    content: str | None = None, calls: list[tuple[str, str]] = (), prompt_tokens: int = 100, completion_tokens: int = 20
) -> dict[str, Any]:
    """A chat.completion body; `calls` are (tool name, raw arguments string)."""
    msg: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        msg["tool_calls"] = [
            {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": a}}
            for i, (n, a) in enumerate(calls)
        ]
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "test-model",
        "choices": [{"index": 0, "message": msg, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


class ChatServer:
    """POST /v1/chat/completions answered from `replies`, in order. A reply is a body (200),
    or {"status": 429|500|401, "headers": {...}}, or {"delay": seconds, "body": ...} (to make
    the client time out). Every request is kept: JSON body and headers."""

    def __init__(self, replies: list[dict[str, Any]]) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(
                    {"path": self.path, "body": body, "headers": {k.lower(): v for k, v in self.headers.items()}}
                )
                reply = server.replies.pop(0) if server.replies else {"status": 500}
                if "delay" in reply:
                    time.sleep(reply["delay"])
                    reply = reply["body"]
                status = reply.get("status", 200) if "choices" not in reply else 200
                data = json.dumps(
                    reply if status == 200 else {"error": {"message": f"scripted {status}", "type": "test"}}
                ).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in reply.get("headers", {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> ChatServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


def record_llm(expos: Any, roles: dict[str, LLMConfig]) -> None:
    """An agents.config event naming LLM agents for `roles` (scripted for the others)."""
    from rsi_master.agents._config import SCRIPTED_AGENTS

    agents = {r: (LLM_AGENTS[r] if r in roles else SCRIPTED_AGENTS[r]) for r in ("main", "worker", "reviewer")}
    record_setup(expos, AgentsSetup(agents=agents, llm=roles))


def script_file(tmp_path: Path, script: dict[str, Any], name: str = "script.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(script))
    return str(path)


def fake(tmp_path: Path, script: dict[str, Any], **kw: Any) -> LLMConfig:
    return LLMConfig(provider="fake", script=script_file(tmp_path, script), **kw)
