"""Run directories: a ledger, an artifact store and a public key, verifiable as a whole."""

from ._export import export_run
from ._memo import VerifyMemo, memo_for
from ._rundir import (
    ARTIFACTS_POINTER,
    DRIVER_LOCK,
    LEDGER_FILE,
    LEDGER_POINTER,
    PUBLIC_KEY_FILE,
    REPORT_FILE,
    RunDir,
    is_run_dir,
    new_run_id,
)
from ._verify import RunReport, verify_run

__all__ = [
    "ARTIFACTS_POINTER",
    "DRIVER_LOCK",
    "LEDGER_FILE",
    "LEDGER_POINTER",
    "PUBLIC_KEY_FILE",
    "REPORT_FILE",
    "RunDir",
    "RunReport",
    "VerifyMemo",
    "export_run",
    "is_run_dir",
    "memo_for",
    "new_run_id",
    "verify_run",
]
