"""Command-line interfaces."""

import sys

from ._main import build_parser
from ._main import main as _main

__all__ = ["build_parser", "main"]


def main() -> None:
    sys.exit(_main())
