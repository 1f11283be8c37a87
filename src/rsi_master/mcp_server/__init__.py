"""ExpOS for external agents over the Model Context Protocol (`rsi-master mcp`), and the
tool reference generated from the registry for `docs/external-agents.md`. The `mcp`
SDK is imported only when a server starts."""

from ._reference import tool_reference, update_doc
from ._server import LONG_CALLS, ExposDoor, build_server, check_loopback, mcp_tools, serve

__all__ = [
    "LONG_CALLS",
    "ExposDoor",
    "build_server",
    "check_loopback",
    "mcp_tools",
    "serve",
    "tool_reference",
    "update_doc",
]
