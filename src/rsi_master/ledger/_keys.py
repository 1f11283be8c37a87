"""Ed25519 keys for signing ledger checkpoints.

The private key lives in an operator key directory outside the run directory (agents
work inside the run directory and must not be able to re-sign a rewritten history). The
run directory carries only the public key. The key directory also keeps, per run:

    runs/<run_id>.json      the run's record (`RunRecord`): its key id and directory, written
                            when the run is created; `verify` finds runs through it
    witness/<run_id>.json   the newest signed tree head, with its compact range
    witness/<run_id>.lock   serialises the writers that replace the witness

so a run directory replaced by an older copy, or by another history, is caught even when
the copy is internally consistent.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .. import _durable
from ..errors import KeyMismatchError, RsiMasterError
from ._files import write_json_atomic
from ._schema import wall_utc  # the key directory's bookkeeping is real time, a simulated run's too

__all__ = [
    "KEY_DIR_ENV",
    "RUN_ID_PATTERN",
    "KeyDir",
    "RunRecord",
    "Signer",
    "default_key_dir",
    "key_id",
    "load_public_key",
    "public_key_pem",
    "read_secret",
    "verify_signature",
    "write_secret",
]

KEY_DIR_ENV = "RSI_MASTER_KEY_DIR"
# Run ids name files in the key directory; the id stored in a ledger is attacker-editable,
# so it must not be able to climb out of it ("../x").
RUN_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._\-]{0,127}$"


def check_run_id(run_id: str) -> str:
    if not isinstance(run_id, str) or not re.fullmatch(RUN_ID_PATTERN, run_id):
        raise RsiMasterError(f"invalid run id {run_id!r} (letters, digits, '.', '_', '-'; at most 128)")
    return run_id


def write_secret(path: Path, nbytes: int = 32) -> bytes:
    """Make a secret file once (mode 0600, hex text, in a 0700 folder) and return its bytes.

    Never replaces one (FileExistsError) and never follows a link planted in its place;
    other OSErrors propagate for the caller to name. The per-run secrets of the key directory
    (capabilities, seals) are all made here."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    secret = os.urandom(nbytes)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as fh:
        fh.write(secret.hex() + "\n")
        fh.flush()
        _durable.fsync(fh.fileno())
    return secret


def read_secret(path: Path) -> bytes:
    """A secret file's bytes; FileNotFoundError, OSError or ValueError (not a secret) for the caller to name."""
    return bytes.fromhex(path.read_text(encoding="ascii").strip())


class RunRecord(BaseModel):
    """What the key directory knows about a run, independently of the run directory."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = Field(default=1, description="Record schema version.")
    run_id: str = Field(pattern=RUN_ID_PATTERN, description="The run's id.")
    key_id: str = Field(description="Id of the key that signs this run (the operator's key for it).")
    run_dir: str = Field(description="Absolute path of the run directory when last opened for writing.")
    created: str = Field(description="UTC time the run was created, RFC 3339.")
    seen: str = Field(default="", description="UTC time `run_dir` was last set (creation or a move), RFC 3339.")
    task_dir: str | None = Field(
        default=None,
        description="Absolute path of the task directory the run's task was read from, if any: kept here, "
        "out of the run directory and the ledger, so that `rsi-master agent` can refuse while agents can read it.",
    )


def default_key_dir() -> Path:
    env = os.environ.get(KEY_DIR_ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "rsi-master" / "keys"


def _raw(public: Ed25519PublicKey) -> bytes:
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_id(public: Ed25519PublicKey) -> str:
    """Short stable name of a public key: first 16 hex of SHA-256 of its raw bytes."""
    return hashlib.sha256(_raw(public)).hexdigest()[:16]


def public_key_pem(public: Ed25519PublicKey) -> bytes:
    return public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def load_public_key(data: bytes) -> Ed25519PublicKey:
    try:
        key = serialization.load_pem_public_key(data)
    except ValueError as exc:
        raise RsiMasterError(f"not a PEM public key: {exc}") from None
    if not isinstance(key, Ed25519PublicKey):
        raise RsiMasterError("public key is not Ed25519")
    return key


def verify_signature(public: Ed25519PublicKey, signature_hex: str, message: bytes) -> bool:
    try:
        public.verify(bytes.fromhex(signature_hex), message)
    except (InvalidSignature, ValueError):
        return False
    return True


class Signer:
    """An Ed25519 private key with its id."""

    def __init__(self, private: Ed25519PrivateKey) -> None:
        self._private = private
        self.public = private.public_key()
        self.key_id = key_id(self.public)

    def sign(self, message: bytes) -> str:
        return self._private.sign(message).hex()


class KeyDir:
    """An operator key directory: `<key_id>.pem` private keys and `witness/<run_id>.json`."""

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path).expanduser() if path is not None else default_key_dir()

    def _keys(self) -> list[Path]:
        if not self.path.is_dir():
            return []
        return sorted(self.path.glob("*.pem"))

    def _load(self, file: Path) -> Signer:
        try:
            key = serialization.load_pem_private_key(file.read_bytes(), password=None)
        except (OSError, ValueError) as exc:
            raise KeyMismatchError(f"cannot read signing key {file}: {exc}") from None
        if not isinstance(key, Ed25519PrivateKey):
            raise KeyMismatchError(f"signing key {file} is not Ed25519")
        return Signer(key)

    def default(self) -> Signer:
        """The key new runs are signed with, created (mode 0600) on first use."""
        keys = self._keys()
        if keys:
            return self._load(keys[0])
        self.path.mkdir(parents=True, exist_ok=True, mode=0o700)
        private = Ed25519PrivateKey.generate()
        signer = Signer(private)
        pem = private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        target = self.path / f"{signer.key_id}.pem"
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(pem)
        return signer

    def for_public(self, public: Ed25519PublicKey) -> Signer:
        """The private key matching a run's public key, or a clear error."""
        wanted = key_id(public)
        file = self.path / f"{wanted}.pem"
        if not file.exists():
            have = ", ".join(p.stem for p in self._keys()) or "none"
            raise KeyMismatchError(f"no signing key for this run in {self.path} (run key {wanted}; keys there: {have})")
        signer = self._load(file)
        if signer.key_id != wanted:
            raise KeyMismatchError(f"key file {file} holds key {signer.key_id}, not {wanted}")
        return signer

    def witness_path(self, run_id: str) -> Path:
        return self.path / "witness" / f"{check_run_id(run_id)}.json"

    @contextmanager
    def witness_lock(self, run_id: str) -> Iterator[None]:
        """Held while a witness is read, checked and replaced (writers in other processes)."""
        lock = self.path / "witness" / f"{check_run_id(run_id)}.lock"
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
        except FileNotFoundError:  # the first lock of this key directory
            lock.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    # -- the run index: the key directory's own record of which runs it signs ------------
    def record_path(self, run_id: str) -> Path:
        return self.path / "runs" / f"{check_run_id(run_id)}.json"

    def register(self, record: RunRecord) -> None:
        if self.record_path(record.run_id).exists():
            raise RsiMasterError(f"the key directory already has a run {record.run_id}; run ids must be unique")
        self.save_record(record)

    def save_record(self, record: RunRecord) -> None:
        write_json_atomic(self.record_path(record.run_id), record.model_dump(mode="json"))

    def moved(self, record: RunRecord, run_dir: Path | str) -> None:
        """Remember that the operator put `record`'s run at `run_dir` (moved or copied it, or
        renamed it into place after creating it beside its final path)."""
        self.save_record(record.model_copy(update={"run_dir": str(Path(run_dir).resolve()), "seen": wall_utc()}))

    def record(self, run_id: str) -> RunRecord | None:
        """The record of `run_id`, None if there is none (a damaged one is an error)."""
        path = self.record_path(run_id)
        if not path.is_file():
            return None
        try:
            return RunRecord.model_validate_json(path.read_bytes())
        except (OSError, ValidationError):
            raise RsiMasterError(f"the key directory's record {path} is unreadable") from None

    def record_at(self, run_dir: Path | str) -> RunRecord | None:
        """The run the key directory last saw at `run_dir`, if any (the newest, when a run
        directory was deleted and another run created in its place)."""
        where = str(Path(run_dir).resolve())
        folder = self.path / "runs"
        if not folder.is_dir():
            return None
        found: RunRecord | None = None
        for file in folder.glob("*.json"):
            try:
                rec = RunRecord.model_validate_json(file.read_bytes())
            except (OSError, ValidationError):
                continue
            if rec.run_dir == where and (found is None or (rec.seen or rec.created) > (found.seen or found.created)):
                found = rec
        return found

    def has_key(self, key_id_: str) -> bool:
        return (self.path / f"{key_id_}.pem").is_file()
