"""`python -m rsi_master.cli`: the `rsi-master` command."""

from . import main

main()
