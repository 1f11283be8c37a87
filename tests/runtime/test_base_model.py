from __future__ import annotations

import subprocess
import sys

from rsi_master.runtime import base_model_digest, base_model_dir, base_model_record, dir_digest


def test_shipped_base_loads_offline_and_matches_its_digest():
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = base_model_dir()
    assert dir_digest(path) == base_model_digest()
    tok = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(str(path), local_files_only=True)
    assert model.config.model_type == "llama"
    assert sum(p.numel() for p in model.parameters()) == base_model_record()["n_params"]
    assert tok.eos_token_id == model.generation_config.eos_token_id


def test_importing_the_runtime_stays_light():
    code = "import sys, rsi_master.runtime; print(sorted(m for m in ('torch', 'transformers', 'trl', 'peft') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
