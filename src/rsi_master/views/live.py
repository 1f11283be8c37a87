"""The live view: the report and overview pages served over HTTP, redrawn as a run's ledger grows.
A module of its own, out of `rsi_master.views`'s imports: it needs the `serve` extra (Starlette).

Each run has one read-only ExpOS session, kept open: a poll advances its projection by the events
appended since the last poll (never a replay), and the view's fold (`ViewFold`) rebuilds only the
records those events touch. A page asks for what changed since the ledger size it has seen
(`data.json?since=SIZE`) and gets those records and the small sections; the figures, which Plotly
draws from the whole run, are built on a thread of their own on their own schedule (`_drawing`), so
no figure ever delays the delta that carries a new node: the page draws that node in the DAG at
once, provisionally (`_live_page`), until the DAG's next build lays it out. Every session lives
on one worker thread (SQLite connections stay on the thread that opened them); the server's event
loop only waits on it. Nothing the server keeps is needed across its restarts: a restarted
server folds each ledger once and goes on, and the pages reconnect (their first look after it gets
the whole payload).

Every request needs the token (`?token=` once, then a same-site cookie, or a bearer header), on
loopback too: agents' jails share the host's network. On loopback it also answers loopback host
names only (no DNS rebinding). Read-only but for one POST, the guidance form (`_guide_form`)."""

from __future__ import annotations

import asyncio
import gc
import hmac
import ipaddress
import json
import secrets
import socket
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TypeVar

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route

from ..errors import NotARunError, RsiMasterError
from ..expos import ExpOS
from ..rundir import VerifyMemo, is_run_dir, memo_for
from ._collect import Checked, check_open
from ._drawing import Drawing
from ._fold import ViewFold
from ._guide_form import guide_endpoint, guide_form
from ._live_page import LIVE_PAGE_JS
from ._model import RunView
from ._overview import Entry, RunRow, overview_html, run_dirs
from ._report import dag_title, decision_row, report_html, report_payload, report_sections

__all__ = ["GRACE_S", "LiveRuns", "is_loopback", "make_app", "make_server"]

GRACE_S = 1  # seconds open pages' streams get to end when the server stops (they reconnect to the next)
POLL_S = 0.25  # how often an open page's stream looks for new events (a look with none: under 1 ms)
CHECK_S = 60.0  # while a run grows, verify and the audit (each over the whole run) re-run at most this often
SWITCH_S = 0.0005  # the GIL's switch interval while the server runs (Python's default: 5 ms); see make_server
HEARTBEAT_S = 15.0  # a comment line now and then keeps proxies from closing an idle stream
COOKIE = "rsi_master_token"
T = TypeVar("T")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass
class LiveRun:
    """One run's open session, its view's fold and its figures (`drawing`)."""

    path: Path
    drawing: Drawing
    key_dir: str | None = None
    expos: ExpOS | None = None
    memo: VerifyMemo | None = None
    size: int = -1
    fold: ViewFold | None = None
    error: str | None = None
    checked: Checked | None = None
    checked_t: float = 0.0
    checks: int = 0  # verify+audit passes made, for the tests that hold them to their schedule
    finish_checked: bool = False  # whether a pass was made once the run had finished
    kept_row: tuple[int, RunRow] | None = None  # the overview's row of the run, and the size it was made at
    rows_made: int = 0  # for the test that holds the overview to remaking only the rows of runs that grew

    def check(self) -> Checked:
        assert self.expos is not None and self.memo is not None
        self.checked, self.checked_t = check_open(self.expos, self.key_dir, self.memo), time.monotonic()
        self.checks += 1
        return self.checked

    def view(self) -> RunView | None:
        return self.fold.view() if self.fold is not None and self.fold.checked is not None else None

    def row(self) -> RunRow | None:
        """The overview's row of the run, made again only once its ledger has grown (from the
        fold's records and counts: never the whole view)."""
        fold = self.fold
        if fold is None or fold.checked is None:
            return None
        if self.kept_row is None or self.kept_row[0] != self.size:
            workers, reviewers, edges = fold.counts()
            row = RunRow.of(
                fold.view(records=False),
                sizes=(workers, reviewers, edges, len(fold.experiments)),
                actions=Counter(d.action for d in fold.decisions.values()),
                best=fold.curves.best_curves(),
            )
            self.kept_row, self.rows_made = (self.size, row), self.rows_made + 1
        return self.kept_row[1]

    def draw(self) -> None:
        """Take in the figures built since the last look and start the builds now due."""
        self.drawing.update(self.size, self.view)

    def payload(self) -> dict[str, object]:
        """The whole page's data (a page's first look, or its look after the server restarted)."""
        view = self.view()
        assert view is not None
        self.draw()
        figures = {k: d.data for k, d in self.drawing.figures.items()}
        return {**report_payload(view, figures), "size": self.size, "figs": self.held(), "full": True}

    def held(self) -> str:
        """What a page holds once it has this look: this fold's name, and the figure builds so far
        (a page from before a restart, or from a run read afresh, names another fold)."""
        return f"{self.fold.epoch if self.fold is not None else ''}.{self.drawing.builds}"

    def delta(self, since: int, figs: str | None) -> dict[str, object]:
        """What changed after a page saw the run at `since` events holding `figs` (`held()` when it
        looked): the whole payload when the page's look was not this fold's, or the fold cannot say."""
        fold = self.fold
        epoch, _, builds = (figs or "").partition(".")
        changes = fold.changed_since(since) if fold is not None and epoch == fold.epoch else None
        if fold is None or changes is None or not builds.isdigit():
            return self.payload()
        seen = int(builds)
        head = fold.view(records=False)
        decisions = [fold.decisions[s] for s in sorted(changes.decisions) if s in fold.decisions]
        budget = head.budget_s
        return {
            "full": False,
            "size": self.size,
            "figs": self.held(),
            "sections": {**report_sections(head, checks=changes.checks), "dagtitle": dag_title(*fold.counts())},
            "figures": {k: d.data for k, d in self.drawing.figures.items() if d.version > seen} or None,
            "nodes": [fold.nodes[n].model_dump(mode="json") for n in sorted(changes.nodes) if n in fold.nodes],
            "decisions": [d.model_dump(mode="json") for d in decisions],
            "decision_rows": {str(d.seq): decision_row(d, budget) for d in decisions},
            "main_steps": [s.model_dump(mode="json") for s in fold.main_steps_since(since)],
        }


class LiveRuns:
    """The runs under PATH (re-listed at each look, so the list follows new runs), each with its
    session; every method runs on the one worker thread (`call`)."""

    def __init__(self, root: Path, key_dir: str | None) -> None:
        self.root = root
        self.key_dir = key_dir
        self.runs: dict[str, LiveRun] = {}
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rsi-live")
        self.figure_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rsi-figures")
        self.stopping = False  # set when the server stops: open streams end, and their pages reconnect

    async def call(self, fn: Callable[..., T], *args: object) -> T:
        return await asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)

    def single(self) -> bool:
        return is_run_dir(self.root)

    def names(self) -> dict[str, Path]:
        try:
            return {p.name: p for p in run_dirs([str(self.root)])}
        except NotARunError:  # no run here (yet, or any more): an empty list, not a server error
            return {}

    def refresh(self, name: str, *, draw: bool = True) -> LiveRun | None:
        """The run's state after taking in its new events (None for a name that is no run here);
        without `draw`, for the overview, its figures are left as they are."""
        path = self.names().get(name)
        if path is None:
            return None
        live = self.runs.get(name)
        if live is None or live.path != path:
            live = self.runs[name] = LiveRun(path, Drawing(self.figure_pool), key_dir=self.key_dir)
        try:
            if live.expos is None:
                live.expos = ExpOS.open(path, key_dir=self.key_dir, writable=False)
                live.memo = memo_for(path)
                live.fold = ViewFold(live.expos)
            assert live.fold is not None
            first = live.size < 0
            size = live.expos.projection().size
            due = live.checked is not None and time.monotonic() - live.checked_t >= CHECK_S
            if size != live.size:
                # verify and the audit cost the whole run (seconds at 100k events): made at the first
                # look, when the run finishes, and at most every CHECK_S while it grows, at a look
                # that finds no new event (never delaying one that does) unless twice overdue.
                checked = live.checked
                if checked is None or time.monotonic() - live.checked_t >= 2 * CHECK_S:
                    checked = live.check()
                live.fold.update(checked)
                if live.fold.finished and not live.finish_checked:
                    live.finish_checked = True
                    if checked.size < live.fold.size:
                        live.fold.update(live.check())
                live.size, live.error = live.fold.size, None
            elif due and live.checked is not None and live.checked.size < live.size:
                live.fold.update(live.check())
            if draw:
                live.draw()
            if first:
                # A run's records live as long as the server: kept out of the collector's full
                # passes, which at 100k events took 0.7 s of the event path now and then.
                gc.collect()  # nothing unreachable is kept for good
                gc.freeze()
        except RsiMasterError as exc:
            # A run replaced or rewritten under the session: read it afresh at the next look.
            if live.expos is not None:
                live.expos.close()
            live.expos, live.size, live.error, live.checked = None, -1, str(exc), None
            # Figures still being built for the session given up are never taken in.
            live.fold, live.drawing, live.finish_checked = None, Drawing(self.figure_pool), False
        return live

    def entries(self) -> list[Entry]:
        out = []
        for name, path in self.names().items():
            live = self.refresh(name, draw=False)
            row = live.row() if live is not None else None
            out.append(Entry(path, row, live.error if live is not None and row is None else None))
        return out

    def close(self) -> None:
        """Close every session on the thread that opened it, then the thread."""

        def close_all() -> None:
            for live in self.runs.values():
                if live.expos is not None:
                    live.expos.close()
                    live.expos = None

        self.stopping = True
        self.pool.submit(close_all).result()
        self.pool.shutdown(wait=True)
        # A build in flight reads only its view's snapshot: it may end after this, unwaited for.
        self.figure_pool.shutdown(wait=False, cancel_futures=True)


def make_server(runs: LiveRuns, app: Starlette) -> uvicorn.Server:
    """A uvicorn server for `app` whose stop (a signal, or `should_exit`) first ends the open
    streams, so that it does not wait on pages that never close theirs.

    While it serves, the GIL's switch interval is SWITCH_S: a figure build holds the GIL for long
    stretches, and the run's thread, which lets it go at every SQLite row it reads, waited up to
    the default 5 ms to get it back each time (at 100k events a Worker's new events took up to a
    second to fold beside a build)."""

    class Server(uvicorn.Server):
        async def serve(self, sockets: list[socket.socket] | None = None) -> None:
            old = sys.getswitchinterval()
            sys.setswitchinterval(SWITCH_S)
            try:
                await super().serve(sockets)
            finally:
                sys.setswitchinterval(old)

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            runs.stopping = True
            super().handle_exit(sig, frame)

    return Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=GRACE_S))


def _guard(token: str, loopback: bool) -> Callable[[Request], Response | None]:
    def check(request: Request) -> Response | None:
        host = (request.headers.get("host") or "").rsplit(":", 1)[0]
        if loopback and not is_loopback(host):
            return PlainTextResponse("this server answers loopback host names only\n", status_code=403)
        given = request.query_params.get("token") or request.cookies.get(COOKIE) or ""
        auth = request.headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            given = auth[7:]
        if not hmac.compare_digest(given.encode(), token.encode()):
            return PlainTextResponse("a valid token is required\n", status_code=401)
        return None

    return check


def make_app(runs: LiveRuns, *, token: str, loopback: bool) -> Starlette:
    """The live view's ASGI app over `runs`; every request must carry `token`."""
    if len(token) < 16:
        raise RsiMasterError("the live view's token must be at least 16 characters")
    check = _guard(token, loopback)
    csrf = secrets.token_urlsafe(24)  # the guidance form's secret: only pages served here carry it

    def guarded(handler: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            refused = check(request)
            if refused is not None:
                return refused
            response = await handler(request)
            if request.query_params.get("token"):
                response.set_cookie(COOKIE, token, httponly=True, samesite="strict")
            return response

        return endpoint

    async def index(request: Request) -> Response:
        if runs.single():
            return RedirectResponse(f"run/{runs.root.name}/")
        entries = await runs.call(runs.entries)
        return HTMLResponse(overview_html(entries, None))

    async def run_page(request: Request) -> Response:
        def page(name: str) -> str | None:
            live = runs.refresh(name)
            view = live.view() if live is not None else None
            if live is None or view is None:
                return None
            return report_html(view, live="events", data=live.payload())

        html = await runs.call(page, request.path_params["name"])
        if html is None:
            return PlainTextResponse(f"no readable run {request.path_params['name']!r} here\n", status_code=404)
        extra = guide_form(csrf) + f"<script>{LIVE_PAGE_JS}</script>"
        return HTMLResponse(html.replace("</body>", extra + "</body>", 1))

    async def data(request: Request) -> Response:
        try:
            since = int(request.query_params["since"]) if "since" in request.query_params else None
        except ValueError:
            return PlainTextResponse("since is a whole number\n", status_code=400)
        figs = request.query_params.get("figs")

        def look(name: str) -> dict[str, object] | None:
            live = runs.refresh(name)
            if live is None or live.fold is None or live.fold.checked is None:
                return None
            return live.payload() if since is None else live.delta(since, figs)

        data = await runs.call(look, request.path_params["name"])
        if data is None:
            return PlainTextResponse("no such run\n", status_code=404)
        return JSONResponse(data)

    async def events(request: Request) -> Response:
        name = request.path_params["name"]

        async def stream() -> AsyncIterator[str]:
            sent, quiet = (-1, -1), 0.0
            while not runs.stopping and not await request.is_disconnected():
                live = await runs.call(runs.refresh, name)
                if live is None:
                    return
                if (live.size, live.drawing.builds) != sent:
                    sent, quiet = (live.size, live.drawing.builds), 0.0
                    yield f"data: {json.dumps(live.size)}\n\n"
                elif quiet >= HEARTBEAT_S:
                    quiet = 0.0
                    yield ": still here\n\n"
                await asyncio.sleep(POLL_S)
                quiet += POLL_S

        return StreamingResponse(stream(), media_type="text/event-stream", headers={"Cache-Control": "no-store"})

    return Starlette(
        routes=[
            Route("/", guarded(index)),
            Route("/run/{name}/", guarded(run_page)),
            Route("/run/{name}/data.json", guarded(data)),
            Route("/run/{name}/events", guarded(events)),
            Route(
                "/run/{name}/guide",
                guarded(guide_endpoint(runs.call, lambda n: runs.names().get(n), runs.key_dir, csrf)),
                methods=["POST"],
            ),
        ],
    )
