"""Run directories: a ledger, an artifact store and a public key, verifiable as a whole."""

from ._memo import VerifyMemo, memo_for
from ._rundir import LEDGER_FILE, PUBLIC_KEY_FILE, REPORT_FILE, RunDir, new_run_id
from ._verify import RunReport, verify_run

__all__ = [
    "LEDGER_FILE",
    "PUBLIC_KEY_FILE",
    "REPORT_FILE",
    "RunDir",
    "RunReport",
    "VerifyMemo",
    "memo_for",
    "new_run_id",
    "verify_run",
]
