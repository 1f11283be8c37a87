"""A listening TCP socket whose failure is one clear line (the live view and MCP over HTTP)."""

from __future__ import annotations

import errno
import socket

from .errors import RsiMasterError

__all__ = ["listen_tcp"]


def listen_tcp(host: str, port: int) -> socket.socket:
    """A socket bound to `host:port` (not yet listening), or a one-line error: a port in use says so."""
    if not 0 <= port <= 65535:  # socket.bind raises OverflowError, no OSError, for these
        raise RsiMasterError(f"port {port}: a TCP port is a number in 0..65535")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise RsiMasterError(f"{host}:{port} is in use (pick another with --port)") from None
        raise RsiMasterError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock
