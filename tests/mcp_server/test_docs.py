"""Every snippet of docs/external-agents.md, run as its reader would: read from the markdown
here (so doc and test cannot drift), with `/home/me/...` pointed at a scratch run. Servers
start the way each client starts them, with the client's minimal environment, so a snippet
that leans on an exported variable, a relative path or `PATH` fails here too."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import subprocess
import sys
import tomllib

import pytest
from mcp import Client, StdioServerParameters

from rsi_master.expos import ExpOS, tools_for
from rsi_master.mcp_server._reference import BEGIN

from .conftest import ROOT, VENV_BIN, inspector_env, inspector_path, start_http, stop

DOC = ROOT / "docs" / "external-agents.md"
INSPECTOR_PIN = json.loads((ROOT / ".ci" / "package.json").read_text())["dependencies"][
    "@modelcontextprotocol/inspector"
]
NPX = f"npx @modelcontextprotocol/inspector@{INSPECTOR_PIN}"
DOC_URL = "http://127.0.0.1:8765/mcp"


def snippets() -> list[tuple[str, str]]:
    """(language, text) of each fenced block before the generated tool reference."""
    text = DOC.read_text().split(BEGIN, 1)[0]
    return [(m.group(1), m.group(2)) for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.M | re.S)]


def _worker_tools() -> set[str]:
    return {t.llm_name for t in tools_for("worker")}


async def _use(client: Client) -> str:
    listed = await client.list_tools()
    assert {t.name for t in listed.tools} == _worker_tools()
    quota = await client.call_tool("quota_show", {})
    assert not quota.is_error, quota
    return quota.structured_content["max_rows"]


_started: set[str] = set()


def _stdio(argv: list[str], env: dict[str, str] | None = None) -> None:
    # StdioServerParameters without env: the SDK's own minimal environment, as a client gives.
    key = json.dumps([argv, env])
    if key in _started:  # the same server as an earlier snippet's (Claude Code's two forms, Codex's)
        return
    asyncio.run(_use_params(StdioServerParameters(command=argv[0], args=argv[1:], env=env)))
    _started.add(key)


async def _use_params(params: StdioServerParameters) -> None:
    async with Client(params) as client:
        await _use(client)


def _http(url: str) -> None:
    async def go():
        async with Client(url) as client:
            await _use(client)

    asyncio.run(go())


@pytest.mark.heavy
def test_every_snippet_of_the_external_agents_doc_runs(tmp_path, rsi):
    home = tmp_path / "home"
    home.mkdir()
    subst = {
        "/home/me/rsi-master/.venv/bin/rsi-master": rsi,
        "/home/me/rsi-master/.venv/bin/expos": str(VENV_BIN / "expos"),
        "/home/me/rsi-master/.venv/bin/python": sys.executable,
        "/home/me/runs/ext1": str(tmp_path / "runs" / "ext1"),
        "/home/me/rsi-keys": str(tmp_path / "rsi-keys"),
        "/home/me/caps": str(tmp_path / "caps"),
        "/home/me/door.sock": str(tmp_path / "door" / "expos.sock"),
    }
    inspector = inspector_path()
    # A shell of the reader's: their PATH, no RSI_MASTER_* variables, the run's code.
    shell_env = {
        "PATH": f"{VENV_BIN}:/usr/bin:/bin",
        "HOME": str(home),
        "OMP_NUM_THREADS": "1",
        **({"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}),
    }
    http: dict[str, str] = {}
    servers = []
    ran: list[str] = []

    def local(text: str) -> str:
        for doc_path, here in subst.items():
            text = text.replace(doc_path, here)
        assert "/home/me" not in text, text
        return text.replace(DOC_URL, http.get("url", DOC_URL))

    def shell(lines: list[str]) -> None:
        if lines:
            proc = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", "\n".join(lines)],
                capture_output=True,
                text=True,
                env=shell_env,
                cwd=home,
                timeout=300,
            )
            assert proc.returncode == 0, (lines, proc.stdout[-2000:], proc.stderr[-2000:])
            ran.append(proc.stdout)

    _started.clear()
    try:
        blocks = snippets()
        assert [lang for lang, _ in blocks].count("sh") >= 5 and {lang for lang, _ in blocks} == {
            "sh",
            "json",
            "toml",
            "python",
        }
        for lang, text in blocks:
            if lang == "sh":
                plain: list[str] = []
                for line in text.splitlines():
                    line = line.strip()
                    if not line or line.startswith("#"):
                        continue
                    if line.startswith(NPX):
                        shell(plain), plain.clear()
                        if inspector is None:
                            assert os.environ.get("CI", "").lower() not in ("1", "true", "yes"), "no Inspector in CI"
                            continue
                        argv = [str(inspector), *shlex.split(local(line[len(NPX) :])), "--format", "json"]
                        proc = subprocess.run(
                            argv, capture_output=True, text=True, env=inspector_env(home), timeout=120
                        )
                        assert proc.returncode == 0 and not json.loads(proc.stdout)["result"].get("isError"), (
                            line,
                            proc.stdout[-2000:],
                            proc.stderr[-2000:],
                        )
                        ran.append(proc.stdout)
                    elif line.startswith(("claude mcp add", "codex mcp add")):
                        shell(plain), plain.clear()
                        if " -- " in line:  # the server command the client will start
                            _stdio(shlex.split(local(line.split(" -- ", 1)[1])))
                        else:
                            url = shlex.split(local(line))[-1]
                            assert url == http["url"], line
                            _http(url)
                        ran.append(line)
                    elif " door " in line and line.split()[0].endswith("rsi-master"):
                        shell(plain), plain.clear()
                        assert line.endswith("&"), line  # the harness's door, serving in the background
                        door = subprocess.Popen(
                            shlex.split(local(line[:-1])), stderr=subprocess.PIPE, text=True, env=shell_env
                        )
                        servers.append(door)
                        assert "serving" in door.stderr.readline()
                        ran.append(line)
                    elif " mcp " in line and line.split()[0].endswith("rsi-master"):
                        shell(plain), plain.clear()
                        argv = shlex.split(local(line))
                        if "--transport" in argv:  # started by the reader, in their shell
                            proc, url = start_http(argv, env=shell_env)
                            servers.append(proc)
                            assert url.rsplit(":", 1)[0] == DOC_URL.rsplit(":", 1)[0]
                            http["url"] = url
                            _http(url)
                        else:
                            _stdio(argv)
                        ran.append(line)
                    else:
                        plain.append(local(line))
                shell(plain)
            elif lang == "json":
                for server in json.loads(local(text))["mcpServers"].values():
                    _stdio([server["command"], *server["args"]], server.get("env"))
                ran.append(text)
            elif lang == "toml":
                server = tomllib.loads(local(text))["mcp_servers"]["expos"]
                if "url" in server:
                    assert server["url"] == http["url"]
                    _http(server["url"])
                else:
                    _stdio([server["command"], *server["args"]], server.get("env"))
                ran.append(text)
            elif lang == "python":
                script = tmp_path / "snippet.py"
                script.write_text(local(text))
                proc = subprocess.run(
                    [sys.executable, str(script)],
                    capture_output=True,
                    text=True,
                    cwd=home,
                    env={"PATH": "/usr/bin:/bin", "HOME": str(home)},
                    timeout=300,
                )
                assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-2000:])
                assert "data_generate" in proc.stdout and "'n_rows': 200" in proc.stdout, proc.stdout
                ran.append(proc.stdout)
    finally:
        for proc in servers:
            stop(proc)
    with ExpOS.open(tmp_path / "runs" / "ext1", writable=False, key_dir=tmp_path / "rsi-keys") as expos:
        generated = {e.actor.id for e in expos.events("data.generate")}
        calls = expos.events("tool.call")
        identities = {e.actor.id for e in calls}
    assert {"w9", "shell-w1"} <= generated and {"claude-w1", "codex-w1"} <= identities
    assert all(e.actor.cap is not None for e in calls)  # every call made with a capability
    if inspector is not None:
        assert "insp-w1" in generated
