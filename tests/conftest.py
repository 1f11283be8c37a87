"""Shared fixtures. Every test gets its own operator key directory, never ~/.config, and every
test process (each pytest-xdist worker) its own cache directory."""

from __future__ import annotations

import os

import pytest


def pytest_configure(config):
    # One BLAS/OpenMP thread per test process, and so in the processes it starts: the suite's
    # parallelism is pytest-xdist's workers, and a pool over every core in each worker would
    # oversubscribe the cores. Set before torch or numpy is imported.
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    _bytecode_cache(config)
    if not hasattr(config, "workerinput"):
        _rewritten_tests_once(config)
    # pytest-xdist hands out whole files (`--dist loadfile`) and by default the files with the
    # most tests first; with HEAVY_FIRST below, the files that take longest go first instead.
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


# The files that take longest, in the order the workers start them, so that the run never ends on
# one of them while the other workers sit idle; the rest follow in collection order. One order for
# both the default run and the `heavy` one (`-m heavy`): a file's place is its larger total of the
# two, measured with `--durations=0` on two idle cores (a file's tests' call, setup and teardown).
HEAVY_FIRST = (
    "tests/mcp_server/test_inspector.py",
    "tests/expos/test_identity.py",
    "tests/runtime/test_adapter.py",
    "tests/expos/contamination/test_gate.py",
    "tests/expos/test_tools_sample.py",
    "tests/cli/test_cli.py",
    "tests/expos/test_tools.py",
    "tests/runtime/test_warm.py",
    "tests/mcp_server/test_docs.py",
    "tests/expos/contamination/test_characters.py",
    "tests/ledger/test_store.py",
    "tests/views/test_live.py",
    "tests/mcp_server/test_server.py",
    "tests/orchestra/test_first_plans.py",
    "tests/runtime/test_evaluate.py",
    "tests/runtime/test_hf_model.py",
    "tests/orchestra/test_sim_run.py",
    "tests/expos/contamination/test_check.py",
    "tests/views/test_drawing.py",
    "tests/expos/test_task_dir.py",
    "tests/views/test_browser.py",
    "tests/expos/test_gate.py",
    "tests/views/test_guide_form.py",
    "tests/tasks/test_knowledge.py",
    "tests/runtime/test_train.py",
    "tests/ledger/test_backends.py",
    "tests/expos/test_boundary.py",
    "tests/orchestra/test_noprior_campaign.py",
    "tests/cli/test_init_model.py",
    "tests/bench/test_simbench.py",
    "tests/rundir/test_verify.py",
    "tests/cli/test_run_sim.py",
    "tests/views/test_fold.py",
    "tests/orchestra/test_scheduler.py",
    "tests/views/test_report.py",
    "tests/expos/contamination/test_fast_paths.py",
    "tests/bench/test_shortcuts.py",
    "tests/expos/test_user_model.py",
    "tests/orchestra/test_decisions.py",
    "tests/cli/test_run_budget.py",
    "tests/orchestra/test_noprior.py",
    "tests/tasks/test_sealing.py",
    "tests/agents/test_run.py",
)


def pytest_collection_modifyitems(config, items):
    rank = {path: i for i, path in enumerate(HEAVY_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))  # stable: files stay whole


def _bytecode_cache(config) -> None:
    """Where PYTHONDONTWRITEBYTECODE is set, nothing writes our modules' bytecode, and each of the
    hundreds of Python processes the tests start (the CLI, the door, agents) would compile them
    again, a third of a CPU-second each. The process that starts the run compiles them once into
    their `__pycache__` (ignored by git; Python reads it whatever that variable says); later runs
    find it up to date. Third-party packages have theirs from their installation."""
    import compileall

    import rsi_master

    if os.environ.get("PYTHONDONTWRITEBYTECODE") and not hasattr(config, "workerinput"):
        # Silent where it cannot write: each process then compiles them, as without this.
        compileall.compile_dir(os.path.dirname(rsi_master.__file__), quiet=2)


def _rewritten_tests_once(config) -> None:
    """Each pytest-xdist worker collects the whole suite and rewrites the asserts of every test
    module (about 5 CPU-s of its 8): four workers do it four times, at once (on a fresh clone, or
    where PYTHONDONTWRITEBYTECODE is set and none of them keeps the result). pytest reads a
    rewritten module's cached code whatever that variable says (checked against the source's
    hash), so the process that starts the run writes it once, in two processes, before the
    workers start; later runs find it up to date. Uses pytest's own rewriter
    (internal names, pinned by the `test` extra); where they are not there, nothing is written and
    each worker rewrites as before."""
    from concurrent.futures import ProcessPoolExecutor
    from pathlib import Path

    try:
        from _pytest.assertion import rewrite  # noqa: F401  (internal: skip where it moved)
    except ImportError:
        return
    if config.getini("enable_assertion_pass_hook"):
        return  # the rewritten code depends on it; the workers rewrite with it
    root = Path(__file__).resolve().parent
    files = sorted(str(p) for p in root.rglob("*.py") if _rewritten_by_pytest(p) and "fixtures" not in p.parts)
    if not files:
        return
    with ProcessPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as pool:
        list(pool.map(_rewrite_into_cache, [files[i::2] for i in range(2)]))


def _rewritten_by_pytest(path) -> bool:
    return path.name == "conftest.py" or (path.name.startswith("test_") and path.suffix == ".py")


def _rewrite_into_cache(files: list[str]) -> None:
    from pathlib import Path

    from _pytest.assertion.rewrite import PYC_TAIL, _read_pyc, _rewrite_test, _write_pyc, get_cache_dir, try_makedirs

    state = type("State", (), {"trace": staticmethod(lambda _msg: None)})()
    for name in files:
        fn = Path(name)
        cache = get_cache_dir(fn)
        pyc = cache / (fn.name[:-3] + PYC_TAIL)
        if _read_pyc(fn, pyc) is not None or not try_makedirs(cache):
            continue
        source_hash, co = _rewrite_test(fn, None)  # type: ignore[arg-type]  (no assertion-pass hook)
        _write_pyc(state, co, source_hash, pyc)  # type: ignore[arg-type]


@pytest.fixture(scope="session", autouse=True)
def _worker_cache(tmp_path_factory):
    # The sealed evaluator's copies (and anything else under XDG_CACHE_HOME) go to a cache of this
    # test process's own, not the user's ~/.cache, which workers would fill at the same time.
    old = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("cache"))
    yield
    if old is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = old


@pytest.fixture(autouse=True)
def _isolated_key_dir(tmp_path_factory, monkeypatch):
    key_dir = tmp_path_factory.mktemp("keys")
    monkeypatch.setenv("RSI_MASTER_KEY_DIR", str(key_dir))
    return key_dir


@pytest.fixture
def key_dir(_isolated_key_dir):
    return _isolated_key_dir


# -- no test reaches the network --------------------------------------------------------------
# Loopback is allowed (the tests' own chat-completions and MCP servers); any other address, and
# any name lookup of a non-local host, fails the test. Variables that would point an LLM agent at
# a real endpoint are removed, so a test that forgot to configure one cannot reach one.
_LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "", None}


def _is_local(address) -> bool:
    import ipaddress

    if not isinstance(address, tuple):
        return True  # AF_UNIX paths and socketpairs
    host = address[0]
    if host in _LOCAL_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def _no_network(monkeypatch):
    import socket

    real_connect, real_connect_ex, real_getaddrinfo = (
        socket.socket.connect,
        socket.socket.connect_ex,
        socket.getaddrinfo,
    )

    def connect(self, address):
        if not _is_local(address):
            raise OSError(f"test tried to reach the network: {address!r}")
        return real_connect(self, address)

    def connect_ex(self, address):
        if not _is_local(address):
            raise OSError(f"test tried to reach the network: {address!r}")
        return real_connect_ex(self, address)

    def getaddrinfo(host, *args, **kwargs):
        if host not in _LOCAL_HOSTS and not _is_local((host if isinstance(host, str) else str(host), 0)):
            raise OSError(f"test tried to resolve a network host: {host!r}")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    import os

    for var in list(os.environ):
        if var.startswith(
            ("OPENAI_", "RSI_MASTER_LLM_", "RSI_MASTER_MAIN_", "RSI_MASTER_WORKER_", "RSI_MASTER_REVIEWER_")
        ) or var in ("RSI_MASTER_AGENTS", "RSI_MASTER_MAIN", "RSI_MASTER_WORKER", "RSI_MASTER_REVIEWER"):
            monkeypatch.delenv(var)


# -- PostgreSQL, for the ledger backend tests ------------------------------------------------
@pytest.fixture(scope="session")
def postgres():
    """A PostgreSQL cluster with the ledger schema installed: RSI_MASTER_TEST_PG_ADMIN_URL and
    RSI_MASTER_TEST_PG_WRITER_URL if given, else a throwaway one (tests/pg_cluster.py). Without
    the binaries the tests skip, except under CI=true, where that is a failure."""
    import os

    from rsi_master.ledger import install_postgres
    from tests import pg_cluster

    admin, writer = os.environ.get("RSI_MASTER_TEST_PG_ADMIN_URL"), os.environ.get("RSI_MASTER_TEST_PG_WRITER_URL")
    if admin and writer:
        install_postgres(admin, [writer.split("://", 1)[1].split("@", 1)[0]])
        yield pg_cluster.Cluster("", admin, writer, pg_cluster.bin_dir() or "")
        return
    if pg_cluster.bin_dir() is None:
        if os.environ.get("CI") == "true":
            pytest.fail("PostgreSQL binaries are missing under CI=true (apt-get install -y postgresql)")
        pytest.skip("no PostgreSQL binaries (initdb) here: apt-get install -y postgresql")
    with pg_cluster.cluster() as c:
        install_postgres(c.admin_url, [pg_cluster.WRITER])
        yield c


# -- an S3-compatible server, for artifacts on shared storage ---------------------------------
@pytest.fixture(scope="session")
def _s3_endpoint():
    from tests import s3_server

    with s3_server.server() as endpoint:
        yield endpoint


@pytest.fixture
def s3(_s3_endpoint, monkeypatch, tmp_path):
    """An `s3://` URL of its own for this test on the session's S3 server, with this process's
    environment (and its children's) pointed at that server."""
    from tests import s3_server

    for key, value in {**s3_server.ENV, "AWS_ENDPOINT_URL": _s3_endpoint}.items():
        monkeypatch.setenv(key, value)
    return f"s3://{s3_server.BUCKET}/{tmp_path.name}"
