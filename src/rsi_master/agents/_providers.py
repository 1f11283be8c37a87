"""The chat model a role's configuration names: the fake model or an OpenAI-compatible endpoint."""

from __future__ import annotations

import os
from typing import Any

from ..errors import RsiMasterError
from ._fake import FakeModel, load_script
from ._model import ChatModel
from ._openai import OpenAIChatModel

__all__ = ["make_model"]


def make_model(cfg: Any, role: str) -> ChatModel:
    """The model a role's configuration names; the key is read from the environment here."""
    if cfg.provider == "fake":
        return FakeModel(load_script(cfg.script, role))

    key = os.environ.get(cfg.api_key_env or "", "")
    if not (cfg.base_url and cfg.model and key):
        raise RsiMasterError(
            f"the {role} agent's endpoint, model or key ({cfg.api_key_env}) is not set in this process's environment"
        )
    return OpenAIChatModel(
        base_url=cfg.base_url,
        api_key=key,
        model=cfg.model,
        temperature=cfg.temperature,
        max_tokens_param=cfg.max_tokens_param,
    )
