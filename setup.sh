#!/usr/bin/env bash
# Sets up .venv with the whole stack on a fresh machine that has Python 3.11+.
#
# torch is installed first, pinned, so that the rest of the stack does not pick another build:
# the CUDA build when `nvidia-smi` works (a GPU machine), the CPU build otherwise.
# RSI_MASTER_TORCH=cpu|cuda overrides the detection; RSI_MASTER_TORCH_INDEX names a wheel index
# for torch (e.g. a PyTorch CPU or CUDA wheel index, where the machine can reach one).
#
#   ./setup.sh            the stack, torch chosen as above
#   ./setup.sh --gpu      also the [gpu] extra (vLLM, the sealed evaluator's GPU backend)
#   ./setup.sh --dry-run  print the choice and the commands; install nothing
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
TORCH_VERSION=2.13.0
DRY=0
EXTRAS=all
for arg in "$@"; do
  case "$arg" in
    --dry-run) DRY=1 ;;
    --gpu) EXTRAS=all,gpu ;;
    *) echo "setup.sh: unknown option '$arg' (known: --gpu, --dry-run)" >&2; exit 2 ;;
  esac
done

# cpu or cuda, and why, on one line.
torch_build() {
  case "${RSI_MASTER_TORCH:-}" in
    cpu | cuda) echo "${RSI_MASTER_TORCH} (RSI_MASTER_TORCH)"; return 0 ;;
    "" | auto) ;;
    *) echo "setup.sh: RSI_MASTER_TORCH must be cpu or cuda, got '${RSI_MASTER_TORCH}'" >&2; return 2 ;;
  esac
  # The listing is read whole before it is searched: `nvidia-smi -L | grep -q` under pipefail
  # fails when grep exits at the first GPU and nvidia-smi, still writing the next, gets SIGPIPE.
  local listing
  if command -v nvidia-smi >/dev/null 2>&1 && listing=$(nvidia-smi -L 2>/dev/null) && grep -q '^GPU ' <<<"$listing"; then
    echo "cuda (nvidia-smi lists a GPU)"
  else
    echo "cpu (no working nvidia-smi)"
  fi
}

CHOICE=$(torch_build)
BUILD=${CHOICE%% *}
TORCH_ARGS=("torch==${TORCH_VERSION}")
if [ -n "${RSI_MASTER_TORCH_INDEX:-}" ]; then
  TORCH_ARGS+=(--index-url "${RSI_MASTER_TORCH_INDEX}")
fi
echo "torch: ${CHOICE}"
echo "extras: ${EXTRAS}"

run() {
  echo "+ $*"
  if [ "$DRY" = 0 ]; then "$@"; fi
}

# Model output (the unit_tests scorer, GRPO's reward) runs in a bubblewrap sandbox; without it,
# answers run unsandboxed and every score and run summary says so (`trust_boundary:`).
if ! command -v bwrap >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    run apt-get install -y bubblewrap || echo "setup.sh: bubblewrap not installed: model output will run unsandboxed" >&2
  else
    echo "setup.sh: bwrap is missing: model output will run unsandboxed (as root: apt-get install bubblewrap)" >&2
  fi
fi

if [ "$DRY" = 0 ] && [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
run .venv/bin/python -m pip install -q --upgrade pip
run .venv/bin/python -m pip install -q "${TORCH_ARGS[@]}"
if [ "$BUILD" = cuda ]; then
  # A wheel without CUDA would train on the CPU of a GPU machine without saying so.
  run .venv/bin/python -c "import sys, torch; sys.exit(0 if torch.version.cuda else 'setup.sh: the torch wheel installed is a CPU build; set RSI_MASTER_TORCH_INDEX to a CUDA wheel index')"
fi
run .venv/bin/python -m pip install -q -e ".[${EXTRAS}]"
