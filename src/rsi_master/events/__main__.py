"""`python -m rsi_master.events [ROOT]`: write ROOT/docs/events.md (the JSON Schema of every kind)."""

import sys

from ._docs import write

print(write(sys.argv[1] if len(sys.argv) > 1 else "."))
