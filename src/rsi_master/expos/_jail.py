"""The namespace an external agent lives in: what it sees, what it may write, how long it lasts.

Built with bubblewrap. Every process the agent starts is in one PID namespace whose init
is bubblewrap's reaper: when the agent's command ends, the namespace ends and the kernel
kills whatever is left (a `setsid` grandchild included); when the harness dies, bubblewrap
is killed with it (`--die-with-parent` on both sides). The agent sees the host's
filesystem read-only and only its own processes in `/proc`; it writes only to tmpfs mounts
of its own mount namespace (home, `/tmp`, `/var/tmp`, `/dev/shm`), all size-limited and
gone with it. Directories on the way to the agent's own Python and `expos` client that are
closed to other users (a venv under `/root`) are covered by an empty tmpfs with just that
client bound in, read-only, so an operator need not open them. The capability reaches the
agent as a 0400 file owned by the agent's uid in its home, copied from a descriptor.
"""

from __future__ import annotations

import functools
import os
import pwd
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ..errors import RsiMasterError
from ._identity import AgentIdentity, AgentLimits

__all__ = [
    "AGENT_HOME",
    "CAPABILITY_FILE",
    "JailSpec",
    "blocked_dir",
    "bwrap_path",
    "client_paths",
    "jail_argv",
    "userns_works",
]

AGENT_HOME = "/home/agent"
CAPABILITY_FILE = f"{AGENT_HOME}/.expos-capability"
_SMALL_TMPFS = 64 << 20
# A uid is reused after its agent ends, and the kernel keeps a uid's user keyrings across its
# processes: the new agent empties them (as itself) before its command runs.
_FRESH_KEYRINGS = """
import ctypes, os, platform, sys
nr = {"x86_64": 250, "aarch64": 219}.get(platform.machine())
if nr is not None:
    for ring in (-4, -5):  # KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING
        ctypes.CDLL(None).syscall(nr, 7, ring)  # KEYCTL_CLEAR
try:
    os.execvp(sys.argv[1], sys.argv[1:])
except OSError as exc:
    print(f"agent: cannot run {sys.argv[1]!r}: {exc.strerror}", file=sys.stderr)
    sys.exit(127)
"""  # /var/tmp and /dev/shm: room for locks and semaphores, not for data


def bwrap_path() -> str | None:
    return shutil.which("bwrap") or (os.path.exists("/usr/bin/bwrap") and "/usr/bin/bwrap") or None


@functools.cache
def userns_works() -> bool:
    """Whether bubblewrap can make a user namespace here (what a non-root harness needs)."""
    exe = bwrap_path()
    if exe is None:
        return False
    try:
        done = subprocess.run(
            [exe, "--unshare-user", "--unshare-pid", "--ro-bind", "/", "/", "true"], capture_output=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def blocked_dir(path: Path, uid: int, gid: int) -> Path | None:
    """The first directory on the way to `path` (itself included if a directory) that
    `uid`/`gid`, with no supplementary groups, cannot traverse."""
    dirs = [*reversed(path.parents)] + ([path] if path.is_dir() else [])
    for d in dirs:
        st = d.stat()
        bit = stat.S_IXUSR if st.st_uid == uid else stat.S_IXGRP if st.st_gid == gid else stat.S_IXOTH
        if not st.st_mode & bit:
            return d
    return None


def client_paths() -> tuple[Path, ...]:
    """What an agent needs to run `expos` and `rsi-master mcp` on this harness's Python: the
    venv, the base installation, this package (an editable install lives outside both) and every
    site directory on the path (a `.pth` may chain to another venv's packages)."""
    found = [
        Path(sys.prefix),
        Path(sys.base_prefix),
        Path(os.path.realpath(sys.executable)).parent,
        Path(__file__).resolve().parents[1],  # the rsi_master package
        *(Path(p) for p in sys.path if p.endswith(("site-packages", "dist-packages")) and os.path.isdir(p)),
    ]
    out: list[Path] = []
    for p in found:
        p = p.resolve()
        if p.exists() and not any(p == q or q in p.parents for q in out):
            out = [q for q in out if p not in q.parents] + [p]
    return tuple(sorted(out))


@dataclass(frozen=True)
class JailSpec:
    """One agent's namespace: who it runs as, its limits, what it sees of the host."""

    identity: AgentIdentity | None  # None: not root, the agent keeps this uid (in a user namespace)
    limits: AgentLimits
    door_dir: Path  # the door socket's directory, bound read-only (connecting needs no write)
    hidden: tuple[Path, ...]  # host directories covered by an empty tmpfs (run, key directories)
    clients: tuple[Path, ...]  # client_paths(), bound read-only


def _passwd(identity: AgentIdentity | None) -> tuple[bytes, bytes]:
    """/etc/passwd and /etc/group as the agent sees them: the host's plus an entry for itself."""
    uid = identity.uid if identity else os.getuid()
    gid = identity.gid if identity else os.getgid()
    try:
        passwd = Path("/etc/passwd").read_bytes()
        group = Path("/etc/group").read_bytes()
    except OSError:
        passwd = group = b""
    try:
        pwd.getpwuid(uid)
    except KeyError:
        passwd = passwd.rstrip(b"\n") + f"\nagent:x:{uid}:{gid}:rsi-master agent:{AGENT_HOME}:/bin/sh\n".encode()
        group = group.rstrip(b"\n") + f"\nagent:x:{gid}:\n".encode()
    return passwd, group


def _memfd(name: str, data: bytes) -> int:
    fd = os.memfd_create(name, 0)  # no MFD_CLOEXEC: bubblewrap reads it, then the agent never has it
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def jail_argv(spec: JailSpec, cmd: list[str], capability: str) -> tuple[list[str], list[int]]:
    """The bubblewrap command line for `cmd`, and the descriptors it reads (close them after
    starting it). The capability is in a descriptor, never in this command line."""
    exe = bwrap_path()
    if exe is None:
        raise RsiMasterError(
            "agent: bubblewrap (bwrap) is needed to isolate agents; install it (apt-get install bubblewrap)"
        )
    lim = spec.limits
    cap_fd = _memfd("capability", capability.encode() + b"\n")
    passwd, group = _passwd(spec.identity)
    pw_fd, gr_fd = _memfd("passwd", passwd), _memfd("group", group)
    argv = [exe, "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--hostname", "agent"]
    argv += ["--die-with-parent", "--new-session"]
    if spec.identity is None:
        argv += ["--unshare-user", "--disable-userns"]
    argv += ["--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev"]
    argv += ["--perms", "0755", "--tmpfs", "/home"]
    argv += ["--size", str(lim.disk), "--perms", "0700", "--tmpfs", AGENT_HOME]
    argv += ["--size", str(lim.disk), "--perms", "1777", "--tmpfs", "/tmp"]
    for small in ("/var/tmp", "/dev/shm"):
        argv += ["--size", str(_SMALL_TMPFS), "--perms", "1777", "--tmpfs", small]
    uid, gid = (spec.identity.uid, spec.identity.gid) if spec.identity else (os.getuid(), os.getgid())
    # Hidden directories become empty and closed; blocked ones on the way to a client, empty and open.
    masks = dict.fromkeys(spec.hidden, "0700")
    for path in spec.clients:
        blocked = blocked_dir(path, uid, gid)
        if blocked is not None and blocked != path and blocked not in masks:
            masks[blocked] = "0755"
    tmpfs = [Path(p) for p in ("/home", "/tmp", "/var/tmp", "/dev/shm")]
    for d in sorted(masks, key=lambda p: len(p.parts)):
        if d.exists():
            argv += ["--perms", masks[d], "--tmpfs", str(d)]
            tmpfs.append(d)
    binds = [*spec.clients, spec.door_dir]
    # Directories bubblewrap would make on a tmpfs for a bind's mount point are 0700: make them traversable.
    made: set[Path] = set()
    for path in binds:
        for d in reversed(path.parents):
            if d not in made and any(m in d.parents for m in tmpfs):
                argv += ["--perms", "0755", "--dir", str(d)]
                made.add(d)
    for path in binds:
        argv += ["--ro-bind", str(path), str(path)]
    for fd, dest in ((pw_fd, "/etc/passwd"), (gr_fd, "/etc/group")):
        argv += ["--perms", "0644", "--ro-bind-data", str(fd), dest]
    argv += ["--perms", "0400", "--file", str(cap_fd), CAPABILITY_FILE]
    argv += ["--chdir", AGENT_HOME]
    limits = [
        "prlimit",
        f"--nproc={lim.procs}:{lim.procs}",
        f"--data={lim.memory}:{lim.memory}",
        f"--fsize={lim.disk}:{lim.disk}",
        "--core=0:0",
        "--",
    ]
    if spec.identity is None:
        argv += ["--", *limits, *cmd]
    else:
        u = spec.identity
        for cap in ("CAP_SETUID", "CAP_SETGID", "CAP_CHOWN"):
            argv += ["--cap-add", cap]
        drop = [
            "setpriv",
            f"--reuid={u.uid}",
            f"--regid={u.gid}",
            "--clear-groups",
            "--no-new-privs",
            "--inh-caps=-all",
            "--",
        ]
        # Root inside the namespace gives the home and the capability to the agent's uid,
        # then becomes it for good (no capability survives a switch to a non-zero uid).
        init = 'chown -- "$1" "$2" "$3" && shift 3 && exec "$@"'
        argv += ["--", "/bin/sh", "-c", init, "agent-init", f"{u.uid}:{u.gid}", AGENT_HOME, CAPABILITY_FILE]
        argv += [*limits, *drop, sys.executable, "-I", "-S", "-c", _FRESH_KEYRINGS, *cmd]
    return argv, [cap_fd, pw_fd, gr_fd]
