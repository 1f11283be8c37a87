"""Where model output runs: a bubblewrap sandbox as a uid of its own, or a loud fallback.

As root, bwrap (run as root, no user namespace) gives the answer fresh PID, network, mount,
IPC and UTS namespaces, and the runner drops to the `rsi-sandbox` system user (created on first
use) before the answer's first byte runs. Without root, bwrap maps the caller to uid 65534 in a
user namespace of its own (the kernel uid stays the caller's, but nothing of the caller's is
visible). Both see the same filesystem: the interpreter, its standard library and the shared
libraries it loads, read-only; an empty /dev; a small tmpfs at /tmp; no /proc, /etc, home, run,
key or task directory. Where bwrap is missing or cannot start (no root and no user namespaces),
answers run as the harness's user with only an in-process hook in the way, and every scorer
reason and run summary says so (`trust_boundary:`).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from functools import cache
from pathlib import Path

__all__ = ["SANDBOX_USER", "Isolation", "isolation", "unsandboxed"]

SANDBOX_USER = "rsi-sandbox"
_NOBODY = 65534
_TMP_BYTES = 16 << 20
_ROOT_LINKS = ("bin", "lib", "lib32", "lib64", "libx32", "sbin")


@dataclass(frozen=True)
class Isolation:
    """How an answer's process is started: the command before `python -I -S -B child.py`, and the
    uid the runner drops to (root only)."""

    sandboxed: bool
    prefix: tuple[str, ...]
    python: str
    uid: int | None
    gid: int | None
    statement: str


def _sandbox_user() -> tuple[int, int]:
    """The dedicated unprivileged user, created on first use (root only)."""
    with contextlib.suppress(KeyError):
        pw = pwd.getpwnam(SANDBOX_USER)
        return pw.pw_uid, pw.pw_gid
    useradd = shutil.which("useradd") or "/usr/sbin/useradd"
    args = ["--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent"]
    try:
        done = subprocess.run(
            [useradd, *args, "--shell", "/usr/sbin/nologin", SANDBOX_USER], capture_output=True, text=True
        )
    except OSError as exc:
        raise _NoUser(f"cannot create the user {SANDBOX_USER}: {exc}") from None
    try:  # another process may have created it first
        pw = pwd.getpwnam(SANDBOX_USER)
    except KeyError:
        raise _NoUser(f"cannot create the user {SANDBOX_USER}: {done.stderr.strip()[:120]}") from None
    return pw.pw_uid, pw.pw_gid


class _NoUser(Exception):
    """The sandbox user neither exists nor could be created."""


def _libraries(python: str) -> list[str]:
    """The shared libraries the interpreter loads, and the directory of the C library (extension
    modules such as `_ctypes` and `_ssl` load theirs from it)."""
    try:
        out = subprocess.run(["ldd", python], capture_output=True, text=True, timeout=10, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        out = ""
    # Directory links resolved (the sandbox has /lib only as the host's link, if that), names kept.
    files = [
        str(Path(part).parent.resolve() / Path(part).name)
        for line in out.splitlines()
        for part in line.split()
        if part.startswith("/")
    ]
    dirs = {str(Path(f).parent) for f in files if Path(f).name.startswith("libc.so")}
    if not files:  # no ldd: the usual system library directories
        dirs = {str(Path(d).resolve()) for d in ("/lib", "/lib64", "/usr/lib", "/usr/lib64") if Path(d).is_dir()}
    return sorted(dirs) + sorted(f for f in files if not any(f.startswith(d + "/") for d in dirs))


def _bwrap_argv(bwrap: str, python: str, as_root: bool, size: bool) -> list[str]:
    stdlib = sysconfig.get_paths()["stdlib"]
    binds = [python, str(Path(stdlib).resolve()), *_libraries(python)]
    argv = [bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net", "--unshare-ipc"]
    argv += ["--unshare-uts", "--unshare-cgroup-try"]
    if not as_root:
        argv += ["--unshare-user", "--uid", str(_NOBODY), "--gid", str(_NOBODY)]
    links = [n for n in _ROOT_LINKS if Path("/", n).is_symlink()]
    for name in links:
        argv += ["--symlink", os.readlink(Path("/", name)), f"/{name}"]
    made: set[str] = {"/"}
    for path in binds:
        # Each directory above a bind is created readable, so the dropped uid can walk to it.
        for parent in reversed(Path(path).parents):
            p = str(parent)
            if p not in made and p.strip("/").split("/")[0] not in links:
                argv += ["--perms", "0555", "--dir", p]
                made.add(p)
        argv += ["--ro-bind", path, path]
    site = Path(binds[1], "site-packages")
    if site.is_dir():  # an interpreter's own installed packages are no part of its standard library
        argv += ["--tmpfs", str(site)]
    argv += ["--dev", "/dev", "--perms", "1777"]
    argv += ["--size", str(_TMP_BYTES)] if size else []
    argv += ["--tmpfs", "/tmp", "--remount-ro", "/", "--chdir", "/tmp", "--clearenv", "--setenv", "LC_ALL", "C"]
    return argv


def _probe(argv: list[str], python: str, uid: int | None, gid: int | None) -> str:
    """'' when a sandboxed interpreter starts and can drop to `uid`; else why not, in a line."""
    drop = (
        ""
        if uid is None
        else f"import os; os.setgroups([]); os.setresgid({gid}, {gid}, {gid}); os.setresuid({uid}, {uid}, {uid}); "
    )
    code = drop + "import _socket, os; assert not os.path.exists('/proc/1') and os.getuid() != 0"
    try:
        done = subprocess.run([*argv, python, "-I", "-S", "-B", "-c", code], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)[:160]
    return "" if done.returncode == 0 else (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1][:160]


@cache
def isolation() -> Isolation:
    """The isolation this process gives answers: probed once, then the same for every call."""
    python = os.path.realpath(sys.executable)
    bwrap = shutil.which("bwrap")
    why = "bwrap is not installed (Debian: apt-get install bubblewrap)"
    if bwrap is not None:
        as_root = os.geteuid() == 0
        try:
            uid, gid = _sandbox_user() if as_root else (None, None)
        except _NoUser as exc:
            return unsandboxed(str(exc))
        for size in (True, False):  # --size needs bubblewrap 0.7 or later
            argv = _bwrap_argv(bwrap, python, as_root, size)
            why = _probe(argv, python, uid, gid)
            if not why:
                who = f"uid {uid} ({SANDBOX_USER})" if as_root else f"uid {_NOBODY} in a user namespace"
                return Isolation(True, tuple(argv), python, uid, gid, f"bubblewrap sandbox as {who}")
    return unsandboxed(why)


def unsandboxed(why: str) -> Isolation:
    """Today's fallback where no sandbox starts, with the line that says so."""
    return Isolation(
        False,
        (),
        sys.executable,
        None,
        None,
        f"trust_boundary: MODEL OUTPUT IS NOT SANDBOXED ({why}): answers run as uid {os.geteuid()} "
        "with the harness's files in view, behind an in-process hook only",
    )
