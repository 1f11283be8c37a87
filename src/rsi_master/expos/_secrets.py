"""Where a session's secrets come from: the operator key directory, or the process holding it.

A session on the driver's machine (the harness, a slot process, the door) reads the key
directory itself: the signing key, the capability secret and the seal secret. A job on another
machine holds none of them: it is handed a `SealAccess`, the driver's key holder reached with
the job's capability, which checks that capability on every call, signs the job's own events
(`ledger.HeadSigner`), hands the run's protected-split key and verifies the run directory against
the witness on the driver. `ExpOS` asks whichever it has through the functions below; nothing
else in a session touches the key directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..errors import RsiMasterError
from ..ledger import HeadSigner, KeyDir, Problem
from ..rundir import verify_run
from ._capability import Capability, check_capability

if TYPE_CHECKING:
    from ..tasks import SealKey

__all__ = ["SealAccess", "capability_of", "key_dir_of", "run_problems", "seal_key_of"]


@runtime_checkable
class SealAccess(HeadSigner, Protocol):
    """The key holder's side for a job without the key directory (every call carries the job's
    capability, checked by the holder)."""

    def check_capability(self, token: str) -> Capability:
        """The grant `token` carries (CapabilityError, recorded by the holder, if none)."""
        ...

    def seal_key(self, commitment: str | None) -> SealKey:
        """The key that draws this run's protected splits, checked against the contract's commitment."""
        ...

    def run_problems(self) -> list[tuple[str, str]]:
        """`verify_run`'s problems with the run, found on the key holder's side (its witness)."""
        ...


def key_dir_of(keys: object, what: str) -> KeyDir:
    """The operator key directory of a session that has one; for a job without it, a clear error."""
    if isinstance(keys, KeyDir):
        return keys
    raise RsiMasterError(f"{what} needs the operator key directory, which stays with the harness on the driver")


def capability_of(keys: object, run_id: str, token: str) -> Capability:
    if isinstance(keys, SealAccess):
        return keys.check_capability(token)
    return check_capability(key_dir_of(keys, "checking a capability"), run_id, token)


def seal_key_of(keys: object, run_id: str, commitment: str | None) -> SealKey:
    if isinstance(keys, SealAccess):
        return keys.seal_key(commitment)
    from ..runtime import load_seal_key

    return load_seal_key(key_dir_of(keys, "the seal key"), run_id, commitment)


def run_problems(keys: object, path: Path, memo: object) -> list[Problem]:
    """What `verify_run` finds wrong with the run at `path`, checked where the key directory is."""
    if isinstance(keys, SealAccess):
        return [Problem(where, what) for where, what in keys.run_problems()]
    return list(verify_run(path, key_dir=key_dir_of(keys, "verifying the run"), memo=memo).problems)  # type: ignore[arg-type]
