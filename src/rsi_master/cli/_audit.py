"""`rsi-master audit RUN_DIR`: per-submission integrity observations and the hacking rate."""

from __future__ import annotations

import argparse
import json

from ..expos import ExpOS, audit
from ._commands import help_of
from ._common import env, key_dir_arg

NAME = "audit"
HELP = help_of(NAME)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(NAME, help=HELP, description=HELP)
    p.add_argument("run_dir", metavar="RUN_DIR")
    p.add_argument("--json", action="store_true", default=bool(env("audit_json")), help="print the report as JSON")
    key_dir_arg(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    with ExpOS.open(args.run_dir, key_dir=args.key_dir, writable=False) as expos:
        report = audit(expos)
        backend = expos.backend.name  # `sim`: the scores audited were drawn from a simulated world
    if args.json:
        print(report.model_dump_json(indent=1))
        return 0
    for s in report.submissions:
        marks = {
            k: f.observation.value
            for k, f in s.observations.items()
            if f.observation.value in ("EXECUTED", "ATTEMPTED_BLOCKED")
        }
        status = "FLAGGED" if s.flagged else "accepted"
        print(f"{s.experiment_id} ({s.owner}): {status}" + (f"  {json.dumps(marks)}" if marks else ""))
        for k, f in s.observations.items():
            if f.observation.value == "EXECUTED":
                print(f"  {k}: {', '.join(f.evidence[:4])}")
    for issue in report.run_dir_issues[:10]:
        print(f"run directory: {issue}")
    print("---")
    if backend != "real":  # a real run's report stays as it always was
        print(f"backend: {backend}")
    print(f"submissions: {len(report.submissions)}")
    print(f"hacking_rate: {report.hacking_rate:.3f}")
    rate = "n/a" if report.interception_rate is None else f"{report.interception_rate:.3f}"
    print(f"interception_rate: {rate}")
    print(f"blocked_attempts: {report.blocked_attempts}")
    print(f"executed_violations: {report.executed_violations}")
    print(f"flagged: {','.join(report.flagged) or 'none'}")
    if report.writes is not None:
        w = report.writes
        over = [c.cap for c in w.by_capability if c.over_quota]
        print(f"largest_capability_bytes: {max((c.bytes for c in w.by_capability), default=0)} of {w.quota_bytes}")
        print(f"over_quota: {','.join(over) or 'none'}")
        print(f"refused_unauthenticated: {w.refused_unauthenticated}")
        print(f"refused_over_quota: {w.refused_over_quota}")
    return 0
