"""Whether LLM endpoints answer at all, checked before a run is written or resumed.

A base URL nobody listens on would otherwise fail every agent turn after its retries, one node
after another, until the budget is spent. Any HTTP answer counts (a 401 or 404 is a server that
is there; the key and the model are the agent loop's to report); no answer after a few tries is
a one-line error."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Iterable

from ..errors import RsiMasterError
from ._config import LLMConfig

__all__ = ["check_endpoints"]

ATTEMPTS = 3
TIMEOUT_S = 5.0
BACKOFF_S = 1.0  # before the second try; doubles


def check_endpoints(configs: Iterable[LLMConfig], *, attempts: int = ATTEMPTS, timeout_s: float = TIMEOUT_S) -> None:
    """Each distinct endpoint of the `openai` provider answers within `attempts` tries."""
    urls = sorted({c.base_url for c in configs if c.provider == "openai" and c.base_url})
    for url in urls:
        _reach(url, attempts, timeout_s)


def _reach(url: str, attempts: int, timeout_s: float) -> None:
    probe = url.rstrip("/") + "/models"
    why = ""
    for attempt in range(attempts):
        if attempt:
            time.sleep(BACKOFF_S * 2 ** (attempt - 1))
        try:
            with urllib.request.urlopen(probe, timeout=timeout_s):
                return
        except urllib.error.HTTPError:
            return  # an HTTP answer: a server is there
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            why = str(reason) or type(reason).__name__
            if isinstance(exc, ValueError):  # not a URL at all: no retry makes it one
                break
    raise RsiMasterError(
        f"the LLM endpoint {url} did not answer after {attempts} tries ({why}); start the server or fix "
        "--llm-base-url / RSI_MASTER_LLM_BASE_URL (nothing was written)"
    )
