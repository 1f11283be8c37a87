#!/usr/bin/env bash
# Sets up .venv with the whole stack on a fresh machine that has Python 3.11+.
# torch is pinned first so that pip takes the CPU build instead of a multi-GB CUDA one.
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q torch==2.13.0
.venv/bin/python -m pip install -q -e '.[all]'
