"""RSI-Master: autonomous model post-training you can trust.

`import rsi_master` stays light: torch, transformers and TRL are imported only inside the
runtime functions that need them.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
