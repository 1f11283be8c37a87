"""Helpers shared by subcommands: environment defaults and output."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

__all__ = ["ENV_PREFIX", "env", "is_tty", "key_dir_arg"]

ENV_PREFIX = "RSI_MASTER_"


def env(name: str, default: Any = None) -> Any:
    """Default for a flag from `RSI_MASTER_<NAME>`, so every flag can be set from the environment."""
    return os.environ.get(ENV_PREFIX + name.upper().replace("-", "_"), default)


def is_tty() -> bool:
    return sys.stdout.isatty()


def key_dir_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--key-dir",
        default=env("key_dir"),
        metavar="DIR",
        help="operator key directory holding signing keys and witnesses, outside any run directory "
        "(env RSI_MASTER_KEY_DIR; default ~/.config/rsi-master/keys)",
    )
