"""`rsi-master serve`: the live page redraws a node within 2 s of its ledger event, loads nothing
from elsewhere, survives a restart of the server; every request needs the token, on loopback too;
bad input is one line."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

pytest.importorskip("starlette", reason="the live view needs the serve extra (starlette, uvicorn)")

from starlette.testclient import TestClient

from rsi_master.cli._main import main
from rsi_master.cli._serve import bind
from rsi_master.expos import ExpOS
from rsi_master.views.live import CHECK_S, LiveRuns, make_app, make_server

from .conftest import AUTH, MAIN, TOKEN, Served, add_worker
from .test_browser import POINTS


class Server:
    """The live view on a free loopback port, in a thread of this process."""

    def __init__(self, served: Served, port: int = 0) -> None:
        self.sock = bind("127.0.0.1", port)
        self.port = self.sock.getsockname()[1]
        self.runs = LiveRuns(served.runs, str(served.key_dir))
        app = make_app(self.runs, token=TOKEN, loopback=True)
        self.server = make_server(self.runs, app)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)
        self.thread.start()
        while not self.server.started:
            time.sleep(0.05)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def stop(self) -> None:
        self.server.handle_exit(0, None)
        self.thread.join(10)
        self.runs.close()
        self.sock.close()


def wait_points(page, n: int, timeout_s: float) -> float:
    start = time.perf_counter()
    page.wait_for_function(
        "([sel, n]) => document.querySelectorAll(sel).length === n", arg=[POINTS, n], timeout=timeout_s * 1000
    )
    return time.perf_counter() - start


@pytest.mark.heavy
def test_the_live_page_shows_a_new_node_within_2_s_and_outlives_a_server_restart(growing, browser):
    server = Server(growing)
    try:
        loaded = load_url(browser, server.url + "run/live/")
        page = loaded.page
        assert page.locator(POINTS).count() == 1
        time.sleep(1.0)  # the page's stream is open and has sent the current size
        add_worker(growing.expos, "w2", ["w1"])
        assert wait_points(page, 2, 2.0) < 2.0
        page.select_option("#node-select", "w2")
        assert "Predecessors: w1" in page.locator("#panel").inner_text()
    finally:
        server.stop()
    server = Server(growing, server.port)  # a restart: the page reconnects by itself
    try:
        add_worker(growing.expos, "w3", ["w2"])
        wait_points(page, 3, 10.0)
        # Every request went to the server the page came from.
        assert all(u.startswith(server.url) for u in loaded.requests)
        assert [e for e in loaded.errors if "ERR_CONNECTION_REFUSED" not in e and "EventSource" not in e] == []
    finally:
        page.close()
        server.stop()


def load_url(browser, url: str):
    """`load` for a URL (the live page's figures are drawn once its payload is applied)."""
    from .test_browser import Loaded

    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    out = Loaded(page)
    page.on("console", lambda m: out.errors.append(m.text) if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: out.errors.append(str(e)))
    page.on("request", lambda r: out.requests.append(r.url))
    page.goto(f"{url}?token={TOKEN}", wait_until="load")  # the server sets its cookie for the rest
    page.wait_for_selector(POINTS, state="attached")
    assert out.errors == []
    return out


def test_off_loopback_every_request_needs_the_token(growing):
    runs = LiveRuns(growing.runs, str(growing.key_dir))
    try:
        client = TestClient(make_app(runs, token="s3cret-0123456789", loopback=False), base_url="http://192.0.2.1:8765")
        assert client.get("/").status_code == 401
        assert client.get("/run/live/data.json?token=wrong").status_code == 401
        assert client.get("/run/live/data.json", headers={"Authorization": "Bearer nope"}).status_code == 401
        assert (
            client.get("/run/live/data.json", headers={"Authorization": "Bearer s3cret-0123456789"}).status_code == 200
        )
        ok = client.get("/?token=s3cret-0123456789")
        assert ok.status_code == 200 and "live" in ok.text
        assert client.get("/run/live/data.json").status_code == 200  # the cookie the token set
    finally:
        runs.close()


def test_on_loopback_a_foreign_host_name_is_refused(growing):
    runs = LiveRuns(growing.runs, str(growing.key_dir))
    try:
        client = TestClient(make_app(runs, token=TOKEN, loopback=True), base_url="http://127.0.0.1:8765", headers=AUTH)
        assert client.get("/run/live/data.json").status_code == 200
        assert client.get("/", headers={"Host": "attacker.example:8765"}).status_code == 403
        assert client.get("/run/../../etc/data.json").status_code == 404
        unknown = client.get("/run/nope/")  # an unknown run: one line, and nothing kept for it
        assert unknown.status_code == 404 and unknown.text == "no readable run 'nope' here\n"
        assert "nope" not in runs.runs
    finally:
        runs.close()


def test_the_cli_prints_a_token_url_off_loopback_and_refuses_requests_without_it(growing, tmp_path):
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    sock.close()
    cmd = [sys.executable, "-m", "rsi_master.cli", "serve", str(growing.runs), "--host", "0.0.0.0", "--port", str(port)]
    proc = subprocess.Popen([*cmd, "--key-dir", str(growing.key_dir)], stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().strip()
        assert line.startswith(f"serving {growing.runs} at http://0.0.0.0:{port}/?token=")
        token = line.rsplit("token=", 1)[1]
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/run/live/data.json", timeout=30)
        assert refused.value.code == 401
        refused.value.close()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/run/live/data.json?token={token}", timeout=30) as r:
            assert r.status == 200
    finally:
        proc.terminate()
        proc.wait(10)
        proc.stdout.close()


def test_bad_input_is_one_line(growing, tmp_path, capsys):
    sock = bind("127.0.0.1", 0)
    try:
        port = str(sock.getsockname()[1])
        assert main(["serve", str(growing.runs), "--port", port]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "is in use" in err[0]
    finally:
        sock.close()
    assert main(["serve", str(tmp_path / "nothing")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no such run directory" in err[0]


def start_campaign(expos: ExpOS) -> None:
    """The run's settings, as `start_run` records them: guidance is taken by campaigns only."""
    from rsi_master.events import OrchestraStart
    from rsi_master.orchestra import ORCHESTRA

    expos.record(
        ORCHESTRA,
        OrchestraStart(
            version=1, task="arithmetic", budget_s=600.0, slots=1, main="policy", reviewer="evidence", eval_limit=3
        ),
    )


@pytest.mark.heavy
def test_the_guidance_form_appends_exactly_one_event(growing, browser):
    start_campaign(growing.expos)
    server = Server(growing)
    try:
        loaded = load_url(browser, server.url + "run/live/")
        page = loaded.page
        page.fill("#guidance textarea[name=text]", "look at the longer problems")
        page.select_option("#guidance select[name=flow]", "pause")
        with page.expect_navigation():
            page.click("#guidance button[type=submit]")
        assert page.url == server.url + "run/live/"
        page.close()
    finally:
        server.stop()
    given = growing.expos.events("human.guidance")
    assert len(given) == 1
    assert given[0].actor.role == "operator" and given[0].actor.cap
    assert given[0].payload == {"text": "look at the longer problems", "prefer": [], "avoid": [], "stop_worker": []} | {
        "flow": "pause"
    }
    assert all(u.startswith(server.url) for u in loaded.requests)


def test_the_guidance_form_refuses_other_pages_and_bad_guidance_writing_nothing(growing):
    start_campaign(growing.expos)
    runs = LiveRuns(growing.runs, str(growing.key_dir))
    try:
        client = TestClient(make_app(runs, token=TOKEN, loopback=True), base_url="http://127.0.0.1:8765", headers=AUTH)
        page = client.get("/run/live/").text
        csrf = page.split("name='csrf' value='", 1)[1].split("'", 1)[0]
        size = growing.expos.run.ledger.size()
        # A page of another site: no secret, or the secret but another Origin.
        assert client.post("/run/live/guide", data={"text": "x"}).status_code == 403
        foreign = {"origin": "http://evil.example"}
        assert client.post("/run/live/guide", data={"text": "x", "csrf": csrf}, headers=foreign).status_code == 403
        too_long = client.post("/run/live/guide", data={"text": "a" * 4097, "csrf": csrf})
        assert too_long.status_code == 400 and "4096" in too_long.text and len(too_long.text.splitlines()) == 1
        assert client.get("/run/live/guide").status_code == 405
        assert growing.expos.run.ledger.size() == size
        ok = client.post("/run/live/guide", data={"text": "go on", "csrf": csrf}, follow_redirects=False)
        assert ok.status_code == 303 and growing.expos.run.ledger.size() == size + 1
    finally:
        runs.close()


def test_a_new_event_is_folded_without_re_running_verify_and_the_audit(growing):
    runs = LiveRuns(growing.runs, str(growing.key_dir))
    try:
        client = TestClient(make_app(runs, token=TOKEN, loopback=True), base_url="http://127.0.0.1:8765", headers=AUTH)
        assert len(client.get("/run/live/data.json").json()["nodes"]) == 1
        live = runs.runs["live"]
        assert live.checks == 1 and live.checked is not None
        first = live.checked.size
        add_worker(growing.expos, "w2", ["w1"])
        data = client.get("/run/live/data.json").json()
        # The new node is shown; verify and the audit are the first look's, and the page says so.
        assert [n["id"] for n in data["nodes"]] == ["w1", "w2"]
        assert live.checks == 1 and data["size"] == first + 1
        assert f"cover the first {first} of {first + 1} events" in data["sections"]["summary"]
        live.checked_t -= CHECK_S  # a minute on: they are due, at a look that finds no new event
        add_worker(growing.expos, "w3", ["w2"])
        data = client.get("/run/live/data.json").json()
        assert live.checks == 1 and [n["id"] for n in data["nodes"]][-1] == "w3"  # the new node first
        data = client.get("/run/live/data.json").json()  # nothing new: now verify and the audit re-run
        assert live.checks == 2 and live.checked.size == data["size"]
        assert "checked-at" not in data["sections"]["summary"]
        live.checked_t -= 2 * CHECK_S  # twice overdue: re-run even at a look that finds a new event
        add_worker(growing.expos, "w4", ["w3"])
        data = client.get("/run/live/data.json").json()
        assert live.checks == 3 and live.checked.size == data["size"]
    finally:
        runs.close()


def test_a_page_kept_up_by_deltas_holds_what_a_fresh_page_gets(growing):
    """The deltas a page applies (nodes and decisions put in place by id, Main turns appended,
    sections replaced) leave it with the whole payload a page loaded now gets."""
    import re

    from rsi_master.events import AgentStep, DecisionRecord, WorkerFinalize

    start_campaign(growing.expos)
    runs = LiveRuns(growing.runs, str(growing.key_dir))
    try:
        client = TestClient(make_app(runs, token=TOKEN, loopback=True), base_url="http://127.0.0.1:8765", headers=AUTH)
        page = client.get("/run/live/data.json").json()
        assert page["full"]
        nodes = {n["id"]: n for n in page["nodes"]}
        decisions = {d["seq"]: d for d in page["decisions"]}
        steps, sections = list(page["main_steps"]), dict(page["sections"])
        rows: dict[str, str] = {}
        step = AgentStep(
            episode="main", version=1, index=0, content="thinking", tool_calls=[], prompt_tokens=3,
            completion_tokens=2, cost_usd=0.0, seconds=0.1, finish_reason="stop",
        )  # fmt: skip
        writes = [
            lambda: add_worker(growing.expos, "w2", ["w1"]),
            # A decision naming a node the ledger has not seen yet: re-sent once the node comes.
            lambda: growing.expos.record(
                MAIN, DecisionRecord(action="branch", rationale="try w9", evidence=[1], detail={"added": ["w9"]})
            ),
            lambda: growing.expos.record(MAIN, step),
            lambda: add_worker(growing.expos, "w9", ["w2"]),
            lambda: growing.expos.record(
                {"role": "worker", "id": "w1"}, WorkerFinalize(summary="done", claims=[], candidates=[])
            ),
        ]
        for write in writes:
            write()
            d = client.get(f"/run/live/data.json?since={page['size']}&figs={page['figs']}").json()
            assert not d["full"] and d["size"] == page["size"] + 1
            nodes |= {n["id"]: n for n in d["nodes"]}
            decisions |= {x["seq"]: x for x in d["decisions"]}
            rows |= d["decision_rows"]
            steps += d["main_steps"]
            sections |= d["sections"]
            page = d
        fresh = client.get("/run/live/data.json").json()
        assert sorted(nodes.values(), key=lambda n: n["seq"]) == fresh["nodes"]
        assert list(decisions.values()) == fresh["decisions"] and fresh["decisions"][0]["nodes"] == ["w9"]
        assert steps == fresh["main_steps"] and len(steps) == 1
        assert {k: sections[k] for k in ("problems", "summary", "dagtitle")} == {
            k: fresh["sections"][k] for k in ("problems", "summary", "dagtitle")
        }
        assert list(rows.values()) == re.findall(r"<tr data-seq='\d+'>.*?</tr>", fresh["sections"]["decisions"])
        # A size the server never stood at (a page from before its restart): the whole payload.
        assert client.get(f"/run/live/data.json?since=1&figs={page['figs']}").json()["full"]
        # A page that looked before the server restarted (another fold's name): the whole payload.
        assert client.get(f"/run/live/data.json?since={page['size']}&figs=0123abcd.1").json()["full"]
        assert not client.get(f"/run/live/data.json?since={page['size']}&figs={page['figs']}").json()["full"]
        assert client.get("/run/live/data.json?since=x").status_code == 400
    finally:
        runs.close()


@pytest.mark.heavy
def test_the_live_page_puts_new_decisions_and_main_turns_in_place(growing, browser):
    from rsi_master.events import AgentStep, DecisionRecord

    server = Server(growing)
    try:
        loaded = load_url(browser, server.url + "run/live/")
        page = loaded.page
        time.sleep(1.0)  # the page's stream is open
        decision = growing.expos.record(
            MAIN, DecisionRecord(action="branch", rationale="try <b>w9</b>", evidence=[1], detail={"added": ["w9"]})
        )
        growing.expos.record(
            MAIN,
            AgentStep(
                episode="main", version=1, index=0, content="thinking", tool_calls=[], prompt_tokens=3,
                completion_tokens=2, cost_usd=0.0, seconds=0.1, finish_reason="stop",
            ),
        )  # fmt: skip
        row = f"#sec-decisions tbody tr[data-seq='{decision.seq}']"
        page.wait_for_selector(row, timeout=5000)
        page.wait_for_selector("#main-transcript details", timeout=5000)
        assert "try <b>w9</b>" in page.locator(row).inner_text()  # text, never markup
        add_worker(growing.expos, "w9", ["w1"])  # the decision now names the node it added
        page.wait_for_function(
            "(sel) => document.querySelector(sel).children[3].textContent === 'w9'", arg=row, timeout=5000
        )
        assert page.locator("#sec-decisions tbody tr").count() == 1
        assert page.locator("#main-transcript h3").inner_text() == "Main agent transcript (1 turns)"
        assert loaded.errors == [] and all(u.startswith(server.url) for u in loaded.requests)
        page.close()
    finally:
        server.stop()


def test_the_overview_remakes_only_the_rows_of_runs_that_grew(growing):
    from rsi_master.views import collect
    from rsi_master.views._overview import RunRow

    with ExpOS.create(growing.runs / "other", "arithmetic", eval_limit=3, key_dir=growing.key_dir) as other:
        add_worker(other, "v1", [])
    runs = LiveRuns(growing.runs, str(growing.key_dir))
    try:
        client = TestClient(make_app(runs, token=TOKEN, loopback=True), base_url="http://127.0.0.1:8765", headers=AUTH)
        assert client.get("/").status_code == 200
        made = lambda: {n: live.rows_made for n, live in runs.runs.items()}  # noqa: E731
        assert made() == {"live": 1, "other": 1}
        client.get("/")
        assert made() == {"live": 1, "other": 1}  # nothing grew: both rows as kept
        add_worker(growing.expos, "w2", ["w1"])
        text = client.get("/").text
        assert made() == {"live": 2, "other": 1}  # only the run that grew
        assert '<td class="num">2</td>' in text.split("run/live/", 1)[1].split("</tr>", 1)[0]  # its 2 Workers
        # The row made from the fold is the row read from the run from scratch.
        assert runs.runs["live"].row() == RunRow.of(collect(growing.runs / "live", key_dir=str(growing.key_dir)))
    finally:
        runs.close()


def test_serve_on_a_directory_with_no_run_yet_lists_runs_as_they_appear(tmp_path):
    runs, key_dir = tmp_path / "runs", tmp_path / "keys"
    runs.mkdir()
    cmd = [sys.executable, "-m", "rsi_master.cli", "serve", str(runs), "--port", "0", "--key-dir", str(key_dir)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        url, token = proc.stdout.readline().strip().split(" at ", 1)[1].split("?token=")
        assert url.startswith("http://127.0.0.1:") and not url.endswith(":0/")  # the port bound, not 0
        assert proc.stdout.readline().strip() == f"no run in {runs} yet: the list of runs fills as runs appear"
        q = f"?token={token}"
        with urllib.request.urlopen(url + q, timeout=30) as r:
            assert r.status == 200
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(url + "run/live/data.json" + q, timeout=30)
        assert missing.value.code == 404
        missing.value.close()
        ExpOS.create(runs / "live", "arithmetic", eval_limit=3, key_dir=key_dir).close()
        with urllib.request.urlopen(url + "run/live/data.json" + q, timeout=30) as r:
            assert r.status == 200
    finally:
        proc.terminate()
        proc.wait(10)
        proc.stdout.close()


# An agent's shell beside a loopback `serve`: the jail shares the host's network, so it can reach
# the port. Without the operator's token it reads nothing and posts nothing.
AGENT = r"""
import re, sys, urllib.error, urllib.parse, urllib.request
base = sys.argv[1]
def code(url, data=None, headers={}):
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers), timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
status, page = code(base + "run/live/")
csrf = (re.findall("name='csrf' value='([^']+)'", page) or ["none"])[0]
form = urllib.parse.urlencode({"text": "stop every Worker", "csrf": csrf, "flow": "pause"}).encode()
print(status, code(base + "run/live/data.json")[0], code(base + "run/live/guide", form)[0],
      code(base + "run/live/guide", form, {"Authorization": "Bearer guess-guess-guess"})[0],
      code(base + "run/live/guide?token=", form)[0])
"""


def test_on_loopback_an_agent_without_the_token_neither_reads_nor_guides(growing):
    start_campaign(growing.expos)
    size = growing.expos.run.ledger.size()
    cmd = [sys.executable, "-m", "rsi_master.cli", "serve", str(growing.runs), "--port", "0"]
    proc = subprocess.Popen([*cmd, "--key-dir", str(growing.key_dir)], stdout=subprocess.PIPE, text=True)
    try:
        url, token = proc.stdout.readline().strip().split(" at ", 1)[1].split("?token=")
        assert url.startswith("http://127.0.0.1:") and len(token) >= 16
        agent = subprocess.run([sys.executable, "-c", AGENT, url], capture_output=True, text=True, timeout=60)
        assert agent.returncode == 0, agent.stderr
        assert agent.stdout.split() == ["401"] * 5  # the page, its data, and three tries at the form
        with urllib.request.urlopen(f"{url}run/live/data.json?token={token}", timeout=30) as r:
            assert r.status == 200  # the operator, with the printed URL, is served
    finally:
        proc.terminate()
        proc.wait(10)
        proc.stdout.close()
    assert growing.expos.run.ledger.size() == size and growing.expos.events("human.guidance") == []
