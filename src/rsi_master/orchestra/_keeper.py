"""The run's key holder for jobs on other machines: the key directory stays with the driver.

A Ray task is handed its capability and a `DriverKeys`, a proxy to the `KeyKeeper` that runs in
one process on the driver's machine (a Ray actor pinned to the driver's node). The keeper opens
the run as the harness does, with the operator key directory, and answers a job only with its
capability, checked on every call:

- `sign`: the head over the job's appended events, only if each one extends the chain the keeper
  verified and names the capability's holder as its actor (`ledger.WitnessingSigner`); an event
  as anyone else is refused, nothing is signed (so nothing commits), and the refusal is recorded;
- `vouch` and `publish`: the keeper's verified head, and the operator's witness moved to the seal;
- `check_capability`: the grant, or the refusal (recorded by the keeper, as the door records one);
- `seal_key`: the seeds of the run's protected splits, derived on the driver from the seal secret
  checked against the contract's commitment (the secret itself never leaves);
- `run_problems`: `verify_run` against the witness, for the Reviewer's audit.

The signing key, the capability secret, the seal secret and the key directory's path never leave
the keeper.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .. import _clock
from ..events import GuardBlocked, dump_payload, typed
from ..expos import Capability, CapabilityError, TaskContract, capability_id, check_capability
from ..ledger import ForgedEvent, KeyDir, WitnessingSigner
from ..rundir import RunDir, memo_for, verify_run
from ..tasks import SPLITS

if TYPE_CHECKING:
    from ..tasks import SealKey

__all__ = ["DriverKeys", "KeyKeeper"]

UNAUTHENTICATED = {"role": "public", "id": "unauthenticated"}


class KeyKeeper:
    """The driver's side: the run opened with the operator key directory, answering capabilities."""

    def __init__(
        self, run_dir: str, key_dir: str | None, clock: _clock.Clock | None = None, env: dict[str, str] | None = None
    ) -> None:
        # The driver's store and ledger settings (`_shipped`): this process is the keeper's alone,
        # started by a raylet that may not have them.
        os.environ.update(env or {})
        if clock is not None and clock is not _clock.REAL:
            # This process is the keeper's alone: the run's clock for capabilities' expiry and heads' times.
            self._clock = _clock.use_clock(clock)
            self._clock.__enter__()
        self.keys = KeyDir(key_dir)
        self.run = RunDir.open(run_dir, key_dir=self.keys, writable=True)
        contract = typed(next(self.run.ledger.events(limit=1)), TaskContract).payload
        self.commitment, self.task = contract.seal_commitment, contract.task
        self.signer = WitnessingSigner(self.run.ledger)
        self._seal: SealKey | None = None
        # Refusals are recorded by a thread of their own: a refused writer may still hold the
        # ledger's write lock while this process answers it.
        self._refusals: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._recorder = threading.Thread(target=self._record_refusals, daemon=True, name="keeper-refusals")
        self._recorder.start()

    # -- what a job may ask, each with its capability ----------------------------------------
    def check_capability(self, token: str) -> Capability:
        try:
            return check_capability(self.keys, self.run.run_id, token)
        except CapabilityError as exc:
            self._refuse(UNAUTHENTICATED, str(exc))
            raise

    def vouch(self, token: str) -> tuple[int, str]:
        self.check_capability(token)
        return self.signer.vouch()

    def publish(self, token: str) -> None:
        self.check_capability(token)
        self.signer.publish()

    def sign(self, token: str, rows: Sequence[Any]) -> tuple[bytes, str]:
        cap = self.check_capability(token)
        actor = {"role": cap.role, "id": cap.node, "cap": capability_id(token)}
        try:
            return self.signer.sign(rows, actor)
        except ForgedEvent as exc:
            self._refuse(actor, f"not signed: {exc}")
            raise

    def seal_key(self, token: str, commitment: str | None) -> SealKey:
        self.check_capability(token)
        if commitment != self.commitment:
            raise CapabilityError("the seal key is handed only for this run's contract")
        if self._seal is None:
            from ..runtime import load_seal_key

            # The seeds of this run's protected splits, derived from the secret: never the secret.
            self._seal = load_seal_key(self.keys, self.run.run_id, self.commitment).derive(self.task, SPLITS)
        return self._seal

    def run_problems(self, token: str) -> list[tuple[str, str]]:
        self.check_capability(token)
        report = verify_run(self.run.path, key_dir=self.keys, memo=memo_for(self.run.path))
        return [(p.where, p.what) for p in report.problems]

    def close(self) -> None:
        self._refusals.put(None)
        self._recorder.join(timeout=60)
        self.run.close()

    # -- recording refusals ------------------------------------------------------------------
    def _refuse(self, actor: dict[str, str], reason: str) -> None:
        if next(self.run.ledger.events(kinds=("orchestra.finish",), role="harness", limit=1), None) is not None:
            return  # the run has ended: nothing more is written (as the door)
        payload = GuardBlocked(tool=None, subcategory=None, reason=reason[:300], args={})
        self._refusals.put({"kind": payload.KIND, "actor": actor, "payload": dump_payload(payload)})

    def _record_refusals(self) -> None:
        run: RunDir | None = None
        try:
            while (draft := self._refusals.get()) is not None:
                if run is None:  # its own connection: this thread waits for the refused writer's lock
                    run = RunDir.open(self.run.path, key_dir=self.keys, writable=True)
                run.record(draft)
        finally:
            if run is not None:
                run.close()


class DriverKeys:
    """A job's proxy to the keeper (`expos.SealAccess`): `call(method, *args)` runs one of the
    keeper's methods there, with the job's capability first."""

    def __init__(self, call: Callable[..., Any], capability: str) -> None:
        self._call = call
        self._capability = capability

    def vouch(self) -> tuple[int, str]:
        size, root = self._call("vouch", self._capability)
        return int(size), str(root)

    def sign(self, rows: Sequence[Any]) -> tuple[bytes, str]:
        body, signature = self._call("sign", self._capability, list(rows))
        return bytes(body), str(signature)

    def publish(self) -> None:
        self._call("publish", self._capability)

    def check_capability(self, token: str) -> Capability:
        cap = self._call("check_capability", token)
        return cap if isinstance(cap, Capability) else Capability.model_validate(cap)

    def seal_key(self, commitment: str | None) -> SealKey:
        return self._call("seal_key", self._capability, commitment)

    def run_problems(self) -> list[tuple[str, str]]:
        return [(str(w), str(p)) for w, p in self._call("run_problems", self._capability)]


def local_call(keeper: KeyKeeper) -> Callable[..., Any]:
    """`DriverKeys`' call into a keeper in this process (tests, and the keeper's own checks)."""
    return lambda method, *args: getattr(keeper, method)(*args)
