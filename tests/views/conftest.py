"""Fixtures of the report tests: a simulated 10-hour campaign and the committed v1 run, each made
once per session, and headless Chromium (Debian's, driven by Playwright; never a downloaded one)."""

from __future__ import annotations

import io
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from rsi_master.events import WorkerAdd
from rsi_master.expos import ExpOS
from tests.helpers import built_once, v1_run

CHROMIUM_NAMES = ("chromium", "chromium-browser")


MAIN = {"role": "main", "id": "main"}

# The live view's token in the tests: every request carries it, on loopback too.
TOKEN = "operator-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@dataclass(frozen=True)
class Run:
    run_dir: Path
    key_dir: Path


@pytest.fixture(scope="session")
def sim10h(tmp_path_factory) -> Run:
    """A simulated 10-hour campaign on two slots (seconds of CPU: the clock is simulated); made once
    for all the test run's workers, read-only (a test that changes it changes a copy)."""

    def build(root: Path) -> Path:
        from rsi_master.orchestra import PlainDisplay, RunSpec, start_run
        from rsi_master.sim import generate_world

        start_run(
            RunSpec(
                budget="10h",
                backend="sim",
                world=generate_world(0),
                slots=2,
                seed=0,
                run_dir=root / "run",
                key_dir=str(root / "keys"),
            ),
            display=PlainDisplay(io.StringIO()),
            durable=False,
        )
        return root

    root = built_once(tmp_path_factory, "sim10h", build)
    return Run(root / "run", root / "keys")


@pytest.fixture(scope="session")
def simllm(tmp_path_factory) -> Run:
    """A simulated 2-hour campaign with LLM agents on the offline fake model: transcripts in the
    ledger. Made once for all the test run's workers, read-only."""

    def build(root: Path) -> Path:
        from rsi_master.cli._main import main

        argv = ["run", "--backend", "sim", "--budget", "2h", "--agents", "llm", "--llm-provider", "fake"]
        assert main([*argv, "--dir", str(root / "run"), "--key-dir", str(root / "keys")]) == 0
        return root

    root = built_once(tmp_path_factory, "simllm", build)
    return Run(root / "run", root / "keys")


@pytest.fixture(scope="session")
def v1(tmp_path_factory) -> Run:
    run_dir, key_dir = v1_run(tmp_path_factory.mktemp("v1"))
    return Run(run_dir, key_dir)


def chromium_path() -> str | None:
    given = os.environ.get("RSI_MASTER_CHROMIUM")
    if given:
        return given if Path(given).is_file() else None
    return next((p for n in CHROMIUM_NAMES if (p := shutil.which(n))), None)


@pytest.fixture(scope="package")
def browser() -> Iterator[object]:
    """Headless Chromium: Debian's package (`apt-get install -y chromium`, which .ci/run does) driven by
    Playwright for Python; skipped where either is missing, except under CI, which must run them.
    Package-scoped: Playwright's sync API holds a running event loop in the main thread until it
    stops, which would break `asyncio.run` in every test collected after this package."""
    path = chromium_path()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None  # type: ignore[assignment]
    if path is None or sync_playwright is None:
        msg = (
            "the browser tests need Debian's chromium (apt-get install -y chromium, or RSI_MASTER_CHROMIUM) "
            "and playwright (the test extra)"
        )
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(msg + "; CI must run them")
        pytest.skip(msg)
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=path, args=["--no-sandbox"])
        try:
            yield b
        finally:
            b.close()


def add_worker(expos: ExpOS, wid: str, predecessors: list[str]) -> None:
    expos.record(
        MAIN, WorkerAdd(worker_id=wid, task=f"try {wid}", direction={"family": "x"}, predecessors=predecessors)
    )


@dataclass
class Served:
    runs: Path
    key_dir: Path
    expos: ExpOS


@pytest.fixture
def growing(tmp_path) -> Iterator[Served]:
    """A run being written (for the live view): its contract and one Worker, the session left open
    to add more."""
    runs, key_dir = tmp_path / "runs", tmp_path / "keys"
    runs.mkdir()
    expos = ExpOS.create(runs / "live", "arithmetic", eval_limit=3, key_dir=key_dir)
    add_worker(expos, "w1", [])
    yield Served(runs, key_dir, expos)
    expos.close()
