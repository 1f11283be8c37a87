"""Interfaces for people: the run report (one offline HTML file per run) and the overview of
several runs, both read from the runs' projections, verify and audit."""

from ._bench_page import BENCH_PAGE, REAL_BENCH_PAGE, bench_html, bench_page
from ._collect import collect
from ._model import RunView
from ._overview import Entry, RunRow, overview_html, read_runs, run_dirs
from ._report import report_html
from ._write import REPORT_FILE, write_page, write_report

__all__ = [
    "BENCH_PAGE",
    "REAL_BENCH_PAGE",
    "REPORT_FILE",
    "Entry",
    "RunRow",
    "RunView",
    "bench_html",
    "bench_page",
    "collect",
    "overview_html",
    "read_runs",
    "report_html",
    "run_dirs",
    "write_page",
    "write_report",
]
