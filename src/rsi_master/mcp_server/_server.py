"""ExpOS over the Model Context Protocol, for external coding agents (Claude Code, Codex,
any MCP client): one run, one role, one caller identity per server.

Built on the official `mcp` SDK's low-level server, so that every call, including a name
the role was not offered, reaches `ExpOS.call` and its role checks, guards and refusal
records (a higher-level server would answer unknown names itself, unrecorded). Tools are
listed under their LLM names (`data_generate`) with the registry's input and result
schemas; a refused, invalid or failed call comes back as an error result the agent can
read and correct.

Transports: stdio, and streamable HTTP bound to loopback only (a server holds an
identity in the run: whoever reaches the port acts as it).
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import socket
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ..errors import RsiMasterError

__all__ = ["ExposDoor", "build_server", "check_loopback", "serve"]


class ExposDoor:
    """The run's ExpOS session, owned by one thread (its SQLite connections belong to the
    thread that opened them); calls are serialized through it."""

    def __init__(self, run_dir: str | Path, role: str, caller_id: str, key_dir: str | None = None) -> None:
        from ..expos import ROLES, Caller, ExpOS

        if role not in ROLES:
            raise RsiMasterError(f"unknown role {role!r}; roles: {', '.join(ROLES)}")
        self.caller = Caller(role, caller_id)
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="expos")
        try:
            self.expos = self.pool.submit(ExpOS.open, run_dir, key_dir=key_dir).result()
        except BaseException:
            self.pool.shutdown()
            raise

    async def call(self, name: str, args: dict[str, Any]) -> Any:
        return await asyncio.wrap_future(self.pool.submit(self._call, name, args))

    def _call(self, name: str, args: dict[str, Any]) -> Any:
        from ..expos._external import external_call

        return external_call(self.expos, self.caller, name, args)

    def close(self) -> None:
        self.pool.submit(self.expos.close).result()
        self.pool.shutdown()


def build_server(door: ExposDoor) -> Any:
    import mcp_types as types
    from mcp.server import Server

    from .. import __version__
    from ..expos import ToolError, tools_for

    tools = tools_for(door.caller.role)

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=[
            types.Tool(name=t.llm_name, title=t.name, description=t.description,
                       input_schema=t.input.model_json_schema(), output_schema=t.result.model_json_schema())
            for t in tools])

    async def call_tool(ctx: Any, params: Any) -> Any:
        try:
            result = await door.call(params.name, dict(params.arguments or {}))
        except ToolError as exc:
            kind = type(exc).__name__.removeprefix("Tool").lower()
            return types.CallToolResult(content=[types.TextContent(text=f"{kind}: {exc}")], is_error=True)
        data = result.model_dump(mode="json")
        return types.CallToolResult(content=[types.TextContent(text=json.dumps(data, sort_keys=True))],
                                    structured_content=data)

    c = door.caller
    return Server("rsi-master-expos", version=__version__, on_list_tools=list_tools, on_call_tool=call_tool,
                  instructions=f"ExpOS tools of an RSI-Master run, as {c.role} {c.id}. Every call is checked "
                               "against the run's frozen task contract and recorded in its ledger.")


def check_loopback(host: str) -> None:
    if host == "localhost":
        return
    try:
        if ipaddress.ip_address(host).is_loopback:
            return
    except ValueError:
        pass
    raise RsiMasterError(f"--host {host}: the MCP server binds to loopback only (127.0.0.1, ::1 or localhost)")


def serve(run_dir: str | Path, role: str, caller_id: str, *, transport: str = "stdio", host: str = "127.0.0.1",
          port: int = 8765, key_dir: str | None = None) -> None:
    if transport not in ("stdio", "http"):
        raise RsiMasterError(f"--transport must be stdio or http, got {transport!r}")
    if transport == "http":
        check_loopback(host)
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise RsiMasterError("the MCP server needs the mcp package: pip install 'rsi-master[llm]'") from None
    door = ExposDoor(run_dir, role, caller_id, key_dir)
    try:
        server = build_server(door)
        asyncio.run(_stdio(server) if transport == "stdio" else _http(server, host, port, door))
    finally:
        door.close()


async def _stdio(server: Any) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


async def _http(server: Any, host: str, port: int, door: ExposDoor) -> None:
    import uvicorn

    app = server.streamable_http_app(host=host)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise RsiMasterError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    print(f"rsi-master mcp: {door.caller.role} {door.caller.id} of {door.expos.run.path} at "
          f"http://{shown}:{bound}/mcp", file=sys.stderr, flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    try:
        await uvicorn.Server(config).serve(sockets=[sock])
    finally:
        sock.close()
