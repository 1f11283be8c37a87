"""`python -m rsi_master.mcp_server [--check] [DOC ...]`: regenerate (or check) the tool reference."""

import sys

from ._reference import main

sys.exit(main(sys.argv[1:]))
