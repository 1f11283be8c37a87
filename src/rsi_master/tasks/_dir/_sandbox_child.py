"""Runs one unit-test answer inside the sandbox (a script: `python -I -S -B _sandbox_child.py`).

Reads {"program", "tests", "token", "timeout_s", "memory_mb"} from standard input, limits
itself, refuses sockets, new processes, signals and native code through an audit hook, runs
the program and then the tests, and prints the token only after both ran to the end: an answer
that exits early (sys.exit(0), os._exit(0), killing itself) never prints it. Standard library only.
"""

import contextlib
import json
import math
import os
import resource
import sys

_BLOCKED_PREFIXES = ("socket.", "subprocess.", "os.exec", "os.spawn", "os.posix_spawn", "ctypes.", "_ctypes.")
_BLOCKED = frozenset(
    {
        "os.fork",
        "os.forkpty",
        "os.system",
        "os.kill",
        "os.killpg",
        "signal.pthread_kill",
        "sys._getframe",
        "sys._current_frames",
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
        "pty.spawn",
        "webbrowser.open",
    }
)


def _guard(event, args):
    if event in _BLOCKED or event.startswith(_BLOCKED_PREFIXES):
        raise PermissionError(f"sandbox: {event} is not allowed")


def _limit(timeout_s, memory_mb):
    cpu = math.ceil(timeout_s) + 1
    memory = memory_mb * 1024 * 1024
    for name, value in (
        ("RLIMIT_CPU", cpu),
        ("RLIMIT_AS", memory),
        ("RLIMIT_FSIZE", 1 << 20),
        ("RLIMIT_CORE", 0),
        ("RLIMIT_NPROC", 0),  # no fork bombs: no new process at all
    ):
        limit = getattr(resource, name, None)
        if limit is not None:
            with contextlib.suppress(ValueError, OSError):  # a hard limit already lower than ours stays
                resource.setrlimit(limit, (value, value))


def main():
    job = json.loads(sys.stdin.read())
    sys.stdin.close()
    token = job.pop("token")
    program, tests = job.pop("program"), job.pop("tests")
    _limit(float(job["timeout_s"]), int(job["memory_mb"]))
    del job
    sys.addaudithook(_guard)
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    exec(compile(program, "<answer>", "exec"), namespace)
    exec(compile(tests, "<tests>", "exec"), namespace)
    sys.stdout.flush()
    os.write(1, ("\n" + token + "\n").encode())
    os._exit(0)


main()
