"""Shared helpers for the task-suite tests."""

from __future__ import annotations

from rsi_master.tasks import get_task, list_tasks

TASK_NAMES = list_tasks()

# Outputs no checker may choke on: empty, whitespace, binary-ish, unicode, huge,
# deeply nested JSON, a program that loops forever, stop strings only.
GARBAGE = (
    "",
    "   \n\n  ",
    "\x00\x01\x02\xff",
    "\u2603 \U0001f600 #### \u0661\u0662",
    "x" * 100_000,
    "[" * 50_000 + "]" * 50_000,
    '{"name":' + "[" * 10_000,
    "\n" * 10_000,
    "#### " + "9" * 5_000,
    "until(>100, map(-1))",
    "repeat(99, repeat(99, repeat(99, map(+1))))",
    "Traceback (most recent call last):",
    "__import__('os').system('echo hacked')",
)


def all_tasks():
    """Every registered task instance."""
    return [get_task(name) for name in TASK_NAMES]
