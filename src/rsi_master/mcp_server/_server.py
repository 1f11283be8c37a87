"""ExpOS over the Model Context Protocol, for external coding agents (Claude Code, Codex,
any MCP client): one run, one role, one caller identity per server.

Built on the official `mcp` SDK's low-level server, so that every call, including a name
the role was not offered, reaches `ExpOS.call` and its role checks, guards and refusal
records (a higher-level server would answer unknown names itself, unrecorded). Tools are
listed under their LLM names (`data_generate`) with the registry's input and result
schemas; a refused, invalid or failed call comes back as an error result the agent can
read and correct.

Transports: stdio, and streamable HTTP bound to loopback only (a server holds a
capability: whoever reaches the port acts as it, so give an HTTP server to one agent).
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import sys
import time
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__
from .._net import listen_tcp
from ..errors import RsiMasterError
from ..expos import (
    TOOLS,
    Budget,
    Caller,
    ExpOS,
    GeneratorView,
    ToolError,
    capability_id,
    door_call,
    external_call,
    generator_views,
    peek_capability,
    tools_for,
)

if TYPE_CHECKING:
    from ..expos import ExpOS

__all__ = ["LONG_CALLS", "ExposDoor", "build_server", "check_loopback", "mcp_tools", "serve"]


class ExposDoor:
    """One caller's way into the run, named by a capability the harness issued.

    Two ways in. Given the harness's door (`door`, a Unix socket), every call goes through it:
    this process holds no run, no key, nothing but the capability, so an MCP client may start
    it with the agent's own privileges (stdio). Given a run directory instead (`run_dir`), this
    process opens the run itself, which needs the operator key directory: the harness's own
    MCP server (HTTP). Either way the capability is checked on every call (expiry included),
    and the caller is settled here and nowhere else: the server, its tool list and every call
    take it from `door.caller`. Calls are serialized through one thread (the run's SQLite
    connections belong to the thread that opened them)."""

    def __init__(
        self,
        capability: str,
        *,
        run_dir: str | Path | None = None,
        door: str | Path | None = None,
        key_dir: str | None = None,
    ) -> None:

        if (run_dir is None) == (door is None):
            raise RsiMasterError("mcp: give the harness's door (--door SOCKET) or, as the operator, a run directory")
        self.capability = capability
        self.socket = Path(door) if door is not None else None
        self.expos: ExpOS | None = None
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="expos")
        try:
            if self.socket is not None:
                # The door checks the capability; its answer (or refusal) settles who we are.
                view = self.pool.submit(self._door_call, "contract.show", {}).result()
                cap = peek_capability(capability)
                self.caller = Caller(cap.role, cap.node, capability_id(capability))
                self._contract = _contract_from_view(view)
                # The run's families as the door describes them: this process holds no task.
                self.generators = [GeneratorView.model_validate(g) for g in view["generators"]]
                self.where = f"the door {self.socket}"
            else:
                assert run_dir is not None  # exactly one of door and run_dir, checked above
                # Agents' calls run here: the protected items stay in the gate's evaluator process.
                self.expos = self.pool.submit(ExpOS.open, run_dir, key_dir=key_dir, gate_process=True).result()
                self.caller = self.pool.submit(self.expos.authenticate, capability).result()
                self._contract = self.expos.contract
                self.generators = self.pool.submit(generator_views, self.expos).result()
                self.where = str(self.expos.run.path)
        except BaseException:
            if self.expos is not None:
                self.pool.submit(self.expos.close).result()
            self.pool.shutdown()
            raise

    @property
    def contract(self) -> Any:
        return self._contract

    def submit(self, name: str, args: dict[str, Any]) -> Future[Any]:
        return self.pool.submit(self._call, name, args)

    async def call(self, name: str, args: dict[str, Any]) -> Any:
        return await asyncio.wrap_future(self.submit(name, args))

    def _door_call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:

        assert self.socket is not None, "a call through the door on a run opened here"
        return door_call(self.socket, self.capability, name, args)

    def _call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """The call's result as JSON data, or the ToolError the run answered."""

        if self.socket is not None:
            return self._door_call(name, args)
        assert self.expos is not None, "a call on a run opened here"
        caller = self.expos.authenticate(self.capability)  # every call: an expired grant stops here
        return external_call(self.expos, caller, name, args).model_dump(mode="json")

    def close(self) -> None:
        if self.expos is not None:
            self.pool.submit(self.expos.close).result()
        self.pool.shutdown()


def _contract_from_view(view: dict[str, Any]) -> Any:
    """What the tool schemas read of a contract, from `contract.show` (the door's public view)."""
    from types import SimpleNamespace

    return SimpleNamespace(
        allowed_generators=list(view["allowed_generators"]),
        allowed_methods=list(view["allowed_methods"]),
        budget=Budget.model_validate(view["budget"]),
    )


# Calls that train or evaluate a model: minutes, not milliseconds. They report progress at
# once; any call that runs past `progress_every` reports it from then on.
LONG_CALLS = frozenset({"experiment.submit", "eval.run", "eval.review"})


def mcp_tools(door: ExposDoor) -> list[Any]:
    """The role's tools as MCP tools: underscore names, the registry's hints as
    annotations, input schemas tailored to the run's contract."""
    import mcp_types as types

    return [
        types.Tool(
            name=t.llm_name,
            title=t.name,
            description=t.description,
            input_schema=t.input_schema(door.contract, door.generators),
            output_schema=t.result.model_json_schema(),
            annotations=types.ToolAnnotations(
                title=t.name,
                read_only_hint=t.hints.read_only,
                destructive_hint=t.hints.destructive,
                idempotent_hint=t.hints.idempotent,
                open_world_hint=t.hints.open_world,
            ),
        )
        for t in tools_for(door.caller.role)
    ]


def _progress_token(ctx: Any) -> Any:
    """The request's `_meta.progressToken` (on the wire), or None."""
    raw = getattr(ctx, "params", None)
    meta = raw.get("_meta") if isinstance(raw, Mapping) else None
    return meta.get("progressToken") if isinstance(meta, Mapping) else None


async def _with_progress(ctx: Any, name: str, future: Future[Any], every: float) -> Any:
    """Await a call, sending progress notifications while it runs when the client asked
    for them (a progress token): elapsed seconds, growing with each notification."""

    waiting = asyncio.wrap_future(future)
    if _progress_token(ctx) is None:
        return await waiting
    tool = TOOLS.get(name) or next((t for t in TOOLS.values() if t.llm_name == name), None)
    label = tool.name if tool else name
    start = time.monotonic()
    reporting = True

    async def report(progress: float, message: str) -> None:
        nonlocal reporting
        try:
            await ctx.session.report_progress(progress, None, message)
        except Exception:  # a client gone away stops the reports, never the call
            reporting = False

    if tool is not None and tool.name in LONG_CALLS:
        await report(0.0, f"{label}: started")
    while True:
        done, _ = await asyncio.wait({waiting}, timeout=every if reporting else None)
        if done:
            return waiting.result()
        elapsed = time.monotonic() - start
        await report(round(elapsed, 1), f"{label}: running for {elapsed:.0f} s")


def build_server(door: ExposDoor, *, progress_every: float = 5.0) -> Any:
    import mcp_types as types
    from mcp.server import Server

    tools = door.pool.submit(mcp_tools, door).result()

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: Any) -> Any:
        try:
            result = await _with_progress(
                ctx, params.name, door.submit(params.name, dict(params.arguments or {})), progress_every
            )
        except ToolError as exc:
            kind = type(exc).__name__.removeprefix("Tool").lower()
            text = str(exc) if str(exc).startswith(kind) else f"{kind}: {exc}"  # `refused (subcategory): ...`
            return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)
        data = result
        return types.CallToolResult(
            content=[types.TextContent(text=json.dumps(data, sort_keys=True))], structured_content=data
        )

    c = door.caller
    return Server(
        "rsi-master-expos",
        version=__version__,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        instructions=f"ExpOS tools of an RSI-Master run, as {c.role} {c.id}. Every call is checked "
        "against the run's frozen task contract and recorded in its ledger.",
    )


def check_loopback(host: str) -> None:
    if host == "localhost":
        return
    try:
        if ipaddress.ip_address(host).is_loopback:
            return
    except ValueError:
        pass
    raise RsiMasterError(f"--host {host}: the MCP server binds to loopback only (127.0.0.1, ::1 or localhost)")


def serve(
    capability: str,
    *,
    run_dir: str | Path | None = None,
    door: str | Path | None = None,
    transport: str = "stdio",
    host: str = "127.0.0.1",
    port: int = 8765,
    key_dir: str | None = None,
    progress_every: float = 5.0,
) -> None:
    if transport not in ("stdio", "http"):
        raise RsiMasterError(f"--transport must be stdio or http, got {transport!r}")
    if not progress_every > 0:
        raise RsiMasterError(f"--progress-every must be a positive number of seconds, got {progress_every}")
    if transport == "http":
        check_loopback(host)
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise RsiMasterError("the MCP server needs the mcp package: pip install 'rsi-master[llm]'") from None
    expos_door = ExposDoor(capability, run_dir=run_dir, door=door, key_dir=key_dir)
    try:
        server = build_server(expos_door, progress_every=progress_every)
        asyncio.run(_stdio(server) if transport == "stdio" else _http(server, host, port, expos_door))
    finally:
        expos_door.close()


async def _stdio(server: Any) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


async def _http(server: Any, host: str, port: int, door: ExposDoor) -> None:
    import uvicorn

    app = server.streamable_http_app(host=host)
    sock = listen_tcp(host, port)
    # Listening before the address is announced: a client that reads it and connects at once
    # waits in the backlog until uvicorn accepts, instead of being refused.
    sock.listen(2048)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    print(
        f"rsi-master mcp: {door.caller.role} {door.caller.id} through {door.where} at http://{shown}:{bound}/mcp",
        file=sys.stderr,
        flush=True,
    )
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    try:
        await uvicorn.Server(config).serve(sockets=[sock])
    finally:
        sock.close()
