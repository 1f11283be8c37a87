"""Writing pages: the report of one run, the overview of several; each file replaced atomically."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..rundir import REPORT_FILE
from ._collect import collect
from ._report import report_html

__all__ = ["REPORT_FILE", "write_page", "write_report"]


def write_page(path: Path, text: str) -> Path:
    """Write `text` to `path` through a temporary file and a rename: a reader never sees half a page."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=".report-", suffix=".html", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_report(run_dir: str | Path, out: str | Path | None = None, *, key_dir: str | None = None) -> Path:
    """Read `run_dir` and write its report to `out` (default RUN_DIR/report.html); the path written."""
    view = collect(run_dir, key_dir=key_dir)
    target = Path(out) if out is not None else Path(run_dir) / REPORT_FILE
    return write_page(target, report_html(view))
