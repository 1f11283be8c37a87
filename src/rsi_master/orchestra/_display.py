"""Progress for people (rich, on a terminal) and for programs (plain lines otherwise)."""

from __future__ import annotations

import sys
import time
from typing import Any, Protocol

__all__ = ["Display", "PlainDisplay", "RichDisplay", "make_display"]


class Display(Protocol):
    def line(self, text: str) -> None: ...

    def status(self, state: dict[str, Any]) -> None: ...

    def close(self) -> None: ...


class PlainDisplay:
    """One timestamped line per event; status lines only when they change, at most every 10 s."""

    def __init__(self, stream: Any = None) -> None:
        self.stream = stream or sys.stdout
        self.t0 = time.time()
        self._last: tuple[Any, ...] = ()
        self._last_t = 0.0

    def line(self, text: str) -> None:
        print(f"[{time.time() - self.t0:6.0f}s] {text}", file=self.stream, flush=True)

    def status(self, state: dict[str, Any]) -> None:
        key = (state["workers"], state["reviewers"], state["decisions"], tuple(state["running"]))
        if key != self._last and time.time() - self._last_t >= 10:
            self._last, self._last_t = key, time.time()
            best = "n/a" if state["best_verified"] is None else f"{state['best_verified']:.3f}"
            self.line(
                f"budget {state['spent_s']:.0f}/{state['budget_s']:.0f}s | graph {state['workers']} workers "
                f"{state['reviewers']} reviewers {state['edges']} edges | running: "
                f"{', '.join(state['running']) or '-'} | best verified review score {best}"
            )

    def close(self) -> None:
        pass


class RichDisplay:
    """A live panel (graph growth, running nodes, best verified score, budget left) above the log."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.live import Live

        self.console = Console()
        self.t0 = time.time()
        self.state: dict[str, Any] = {}
        self.live = Live(self._render(), console=self.console, refresh_per_second=2, transient=True)
        self.live.start()

    def _render(self) -> Any:
        from rich.progress_bar import ProgressBar
        from rich.table import Table

        s = self.state
        t = Table.grid(padding=(0, 2))
        if not s:
            t.add_row("starting...")
            return t
        left = max(0.0, s["budget_s"] - s["spent_s"])
        t.add_row(
            "budget",
            ProgressBar(total=s["budget_s"], completed=min(s["spent_s"], s["budget_s"]), width=40),
            f"{left:.0f}s left",
        )
        t.add_row(
            "graph",
            f"{s['workers']} workers, {s['reviewers']} reviewers, {s['edges']} edges, {s['decisions']} decisions",
            "",
        )
        t.add_row("running", ", ".join(s["running"]) or "-", "")
        best = "n/a" if s["best_verified"] is None else f"{s['best_verified']:.3f}"
        t.add_row("best verified", best, "(review split)")
        return t

    def line(self, text: str) -> None:
        from rich.markup import escape

        self.live.console.print(f"[dim]{time.time() - self.t0:6.0f}s[/dim] {escape(text)}", highlight=False)

    def status(self, state: dict[str, Any]) -> None:
        self.state = state
        self.live.update(self._render())

    def close(self) -> None:
        self.live.stop()


def make_display(tty: bool) -> Display:
    return RichDisplay() if tty else PlainDisplay()
