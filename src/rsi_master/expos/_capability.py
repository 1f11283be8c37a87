"""Capabilities: who a caller is, issued by the harness instead of declared by the caller.

A capability is a run-scoped token `rsicap1.<body>.<mac>`: the body is the canonical JSON
of `{v, run, role, node, exp, nonce}` (base64url), the MAC is HMAC-SHA256 over the body
bytes under a per-run secret kept in the operator key directory
(`caps/<run_id>.key`, mode 0600, made on first issue). Whoever holds the key directory
(the harness, the operator) can issue and check capabilities; an agent that cannot read
the key directory can neither mint one nor widen its own (role, node id, expiry and run
are all under the MAC). The ledger records which capability acted: the caller's actor
carries the capability's id (the first 16 hex digits of SHA-256 of the token).

No capability is ever issued for the harness role: the harness's own records are written
by harness code that holds the run open, never through the door.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .. import _clock
from ..errors import RsiMasterError
from ..ledger import KeyDir, check_run_id, read_secret, write_secret

__all__ = [
    "AGENT_ROLES",
    "CAP_PREFIX",
    "INLINE_REFUSED",
    "NODE_ID",
    "OPERATOR_ROLE",
    "Capability",
    "CapabilityError",
    "capability_id",
    "check_capability",
    "issue_capability",
    "peek_capability",
    "read_capability",
]

CAP_PREFIX = "rsicap1"
# Roles a capability may carry. "harness" is not among them: it never leaves the harness.
AGENT_ROLES = ("public", "worker", "reviewer", "main")
# A person's own records (guidance): no tool lists this role, so the door refuses its every call.
OPERATOR_ROLE = "operator"
# Node ids are what the ledger's actor id holds; the same shape as a research-graph node id.
NODE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}$")
# A day: long enough for a 10-hour campaign's node, short enough that a leaked token dies.
DEFAULT_TTL_S = 24 * 3600.0


class CapabilityError(RsiMasterError):
    """A capability that is malformed, forged, expired or for another run."""


class Capability(BaseModel):
    """What a capability grants: one role, one node id, in one run, until `exp`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    v: Literal[1] = Field(description="Capability format version.")
    run: str = Field(min_length=1, max_length=128, description="The run id the capability is valid in.")
    role: Literal["public", "worker", "reviewer", "main", "operator"] = Field(description="The caller's role.")
    node: str = Field(pattern=NODE_ID.pattern, description="The caller's node id (the actor id in the ledger).")
    exp: float = Field(description="Expiry, seconds since the epoch (UTC).")
    nonce: str = Field(pattern=r"^[0-9a-f]{16}$", description="Random, so two grants are two tokens.")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _secret_path(keys: KeyDir, run_id: str) -> Path:
    try:
        check_run_id(run_id)
    except RsiMasterError:
        raise CapabilityError(f"run id {run_id!r} cannot name a capability secret") from None
    return keys.path / "caps" / f"{run_id}.key"


def _secret(keys: KeyDir, run_id: str, *, create: bool) -> bytes:
    path = _secret_path(keys, run_id)
    try:
        return read_secret(path)
    except FileNotFoundError:
        if not create:
            raise CapabilityError(
                f"no capability secret for run {run_id} in the key directory {keys.path}: "
                "capabilities of this run can only be checked where they were issued"
            ) from None
    except (OSError, ValueError) as exc:
        raise CapabilityError(
            f"cannot read the capability secret {path}: {getattr(exc, 'strerror', None) or exc}"
        ) from None
    try:
        return write_secret(path)
    except FileExistsError:  # another harness process made it first: use theirs
        return _secret(keys, run_id, create=False)
    except OSError as exc:
        raise CapabilityError(f"cannot write the capability secret {path}: {exc.strerror}") from None


def capability_id(token: str) -> str:
    """The id the ledger records for a capability: not the token (which grants), its hash."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()[:16]


def issue_capability(
    key_dir: KeyDir | Path | str | None,
    run_id: str,
    role: str,
    node: str,
    *,
    ttl_s: float = DEFAULT_TTL_S,
    now: float | None = None,
) -> str:
    """A token granting `role` as `node` in `run_id` for `ttl_s` seconds."""
    keys = key_dir if isinstance(key_dir, KeyDir) else KeyDir(key_dir)
    if role not in (*AGENT_ROLES, OPERATOR_ROLE):
        raise CapabilityError(
            f"no capability is issued for role {role!r}; roles: {', '.join((*AGENT_ROLES, OPERATOR_ROLE))}"
        )
    if not isinstance(node, str) or not NODE_ID.fullmatch(node):
        raise CapabilityError(
            f"node id {node!r} is malformed: 1-128 letters, digits, '_', '.', '-', starting with a letter or digit"
        )
    if not ttl_s > 0:
        raise CapabilityError(f"a capability needs a positive lifetime, got {ttl_s}")
    cap = Capability(
        v=1,
        run=run_id,
        role=role,  # type: ignore[arg-type]
        node=node,
        exp=round((_clock.now() if now is None else now) + ttl_s, 3),
        nonce=secrets.token_hex(8),
    )
    body = json.dumps(cap.model_dump(mode="json"), sort_keys=True, separators=(",", ":")).encode("utf-8")
    mac = hmac.new(_secret(keys, run_id, create=True), body, hashlib.sha256).digest()
    return f"{CAP_PREFIX}.{_b64(body)}.{_b64(mac)}"


INLINE_REFUSED = (
    "a capability is not taken on the command line or from EXPOS_CAPABILITY (any process can read "
    "/proc/PID/cmdline, and the environment travels to every child); give --capability-file FILE, "
    "--capability-file - (standard input) or EXPOS_CAPABILITY_FILE"
)


def read_capability(file: str | Path | None, *, fd: str | None = None, stdin: str | None = None) -> str | None:
    """The token in `file` (`-`: the text `stdin` holds), else in the inherited descriptor `fd`
    (EXPOS_CAPABILITY_FD); None if neither. Tokens travel in files and descriptors only."""
    if file == "-":
        return (stdin or "").strip() or None
    if file:
        try:
            return Path(file).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise CapabilityError(f"cannot read the capability file {file}: {exc.strerror or exc}") from None
    if fd:
        import os

        try:
            n = int(fd)
            try:
                raw = os.pread(n, 4096, 0)  # a file or memfd: every client of the agent reads it again
            except OSError:
                raw = os.read(n, 4096)
        except (ValueError, OSError) as exc:
            raise CapabilityError(f"cannot read the capability descriptor {fd}: {exc}") from None
        return raw.decode("utf-8", "replace").strip() or None
    return None


def peek_capability(token: str) -> Capability:
    """What a token claims, unchecked: only for a process that cannot check it (no key directory)
    and whose every call the door checks anyway, e.g. to list the claimed role's tools."""
    try:
        _, body, _ = token.strip().split(".")
        return Capability.model_validate_json(_unb64(body))
    except (ValueError, TypeError, ValidationError, AttributeError):
        raise CapabilityError(f"malformed capability (expected {CAP_PREFIX}.<body>.<mac>)") from None


def check_capability(
    key_dir: KeyDir | Path | str | None, run_id: str, token: str, *, now: float | None = None
) -> Capability:
    """The grant a token carries, or CapabilityError saying why it grants nothing."""
    keys = key_dir if isinstance(key_dir, KeyDir) else KeyDir(key_dir)
    if not isinstance(token, str) or not token:
        raise CapabilityError(
            "no capability: every call needs one (issued by the harness; "
            "`rsi-master capability RUN_DIR --role R --id ID` for an operator)"
        )
    parts = token.strip().split(".")
    if len(parts) != 3 or parts[0] != CAP_PREFIX:
        raise CapabilityError(f"malformed capability (expected {CAP_PREFIX}.<body>.<mac>)")
    try:
        body, mac = _unb64(parts[1]), _unb64(parts[2])
    except (ValueError, TypeError):
        raise CapabilityError("malformed capability (not base64url)") from None
    expected = hmac.new(_secret(keys, run_id, create=False), body, hashlib.sha256).digest()
    if not hmac.compare_digest(mac, expected):
        raise CapabilityError("capability refused: its MAC does not verify (forged, altered, or from another run)")
    try:
        cap = Capability.model_validate_json(body)
    except ValidationError:
        raise CapabilityError("capability refused: its body does not parse") from None
    if cap.run != run_id:
        raise CapabilityError(f"capability refused: it is for run {cap.run}, not {run_id}")
    if (_clock.now() if now is None else now) >= cap.exp:
        raise CapabilityError("capability refused: it has expired")
    return cap
