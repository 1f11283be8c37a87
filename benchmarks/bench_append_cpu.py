"""CPU seconds of one ledger append as a simulated campaign makes it (fsync off, one small event
per transaction: validated, canonicalised, hashed, its tree head signed into the seal, the
operator's witness moved along a verified consistency proof and rewritten).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_append_cpu.py [N] [DIR]

Figures: docs/bench.md ("What a simulated campaign costs") and docs/benchmarks.md.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from rsi_master import _durable
from rsi_master.ledger import KeyDir, Ledger, Signer

DRAFT = {
    "kind": "tool.call",
    "actor": {"role": "worker", "id": "w1"},
    "payload": {"tool": "eval.run", "args": {"split": "dev", "experiment": "e-0001"}},
}


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    root = Path(tempfile.mkdtemp(dir=sys.argv[2] if len(sys.argv) > 2 else None))
    with _durable.not_durable():
        led = Ledger.create(
            root / "ledger.db", "bench-append", Signer(Ed25519PrivateKey.generate()), KeyDir(root / "keys")
        )
        for _ in range(200):  # a ledger with some history, as a campaign's is
            led.append(DRAFT)
        c0, t0 = time.process_time(), time.perf_counter()
        for _ in range(n):
            led.append(DRAFT)
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
        led.close()
    print(f"appends: {n}  cpu_ms_per_append: {cpu / n * 1e3:.3f}  wall_ms_per_append: {wall / n * 1e3:.3f}")


if __name__ == "__main__":
    main()
