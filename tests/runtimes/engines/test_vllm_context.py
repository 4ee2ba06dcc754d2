"""vLLM's max_model_len (kvplan.runtimes.engines.vllm.context) against vLLM 0.33.0's own ModelConfig: every case of
tests/fixtures/engines/vllm_max_len.json (scripts/engines/record_vllm_max_len.py), the derived default and each
asked length accepted or refused with vLLM's message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.errors import RefusedConfigError
from kvplan.runtimes.engines.vllm.context import default_max_model_len, verify_max_model_len
from kvplan.sources.hf_config import load_hf_config

ROOT = Path(__file__).resolve().parents[3]
RECORDED = json.loads((ROOT / "tests" / "fixtures" / "engines" / "vllm_max_len.json").read_text())
#: cases kvplan does not model: --disable-sliding-window (no such flag here); a model type transformers does not
#: know without trust_remote_code (vLLM refuses the config itself)
SKIPPED = ("-no-window@", "minimax-m1@")
CASES = [c for c in RECORDED["cases"] if not any(s in c["id"] for s in SKIPPED)]


def test_the_recording_is_large_and_varied() -> None:
    assert RECORDED["vllm"] == "0.33.0" and len(CASES) >= 130
    assert sum("error" in c for c in CASES) >= 40 and sum("error" not in c for c in CASES) >= 80


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_vllm_takes_or_refuses_the_length_as_vllm_does(case: dict[str, object]) -> None:
    keys = load_hf_config(str(ROOT / str(case["model"]))).context_keys
    assert keys is not None
    asked = case["asked"]
    if asked is None:
        assert default_max_model_len(keys) == case["max_model_len"]
        return
    assert isinstance(asked, int)
    if "error" in case:
        with pytest.raises(RefusedConfigError) as exc:
            verify_max_model_len(keys, asked)
        recorded = str(case["error"]).split("Value error, ", 1)[1]
        assert recorded.startswith(str(exc.value).removeprefix("vllm: "))
    else:
        assert verify_max_model_len(keys, asked) == case["max_model_len"]


def test_cohere_serves_its_model_max_length(tmp_path: Path) -> None:
    """The issue's case: Command-R's max_position_embeddings (8,192) is below its model_max_length (131,072); vLLM
    takes 131,072 (was: "greater than the derived max_model_len")."""
    from helpers import kv

    folder = ROOT / "tests" / "fixtures" / "engines" / "max_len" / "cohere-model-max-length"
    r = kv("fit", str(folder), "--engine", "vllm", "--gpu", "H200x2", "-tp", "2", "--max-model-len", "128k",
           "--weight-bytes", "70GB")  # fmt: skip
    assert r.exit_code == 0, r.output
    r = kv("fit", str(folder), "--engine", "vllm", "--gpu", "H200x2", "-tp", "2", "--max-model-len", "131073",
           "--weight-bytes", "70GB")  # fmt: skip
    assert r.exit_code == 4 and "User-specified max_model_len (131073) is greater than" in r.stderr
