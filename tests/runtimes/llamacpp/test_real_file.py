"""A real GGUF nobody here wrote — Gemma 3 270M Q4_K_M from the package index — against llama.cpp's own numbers
(tests/fixtures/oracle/compute_archs.json, scripts/record_compute_archs.py: its metadata-only copy, the tokenizer
kept, answers llama.cpp as the full file does)."""

from __future__ import annotations

import json

import pytest
from helpers import FIXTURES

from kvplan.runtimes.llamacpp import LlamaCppSettings, plan
from kvplan.sources import load_model

GGUF = FIXTURES / "oracle" / "file" / "gemma-3-270m-q4_k_m.meta.gguf"
FA = {-1: "auto", 0: "off", 1: "on"}
CASES = [c for c in json.loads((FIXTURES / "oracle" / "compute_archs.json").read_text())["cases"]
         if c["gguf"] == f"file/{GGUF.name}"]  # fmt: skip


def test_the_recording_has_every_setting() -> None:
    assert len(CASES) == 24 and all("context_bytes" in c for c in CASES)
    # llama.cpp's CPU compute buffer, mostly the logits (262,144 × ubatch 512 × 4 B): issue 24's subject
    at = next(c for c in CASES if c["params"]["n_ctx"] == 4096 and c["params"]["n_ubatch"] == 512
              and c["params"]["fa"] == 1 and c["params"]["n_seq_max"] == 1)  # fmt: skip
    assert at["compute_bytes"] == {"CPU": 539_494_400}


@pytest.mark.parametrize("case", CASES, ids=[json.dumps(c["params"], sort_keys=True) for c in CASES])
def test_kv_bytes_equal_llama_cpp_on_the_real_file(case: dict[str, object]) -> None:
    p = case["params"]
    assert isinstance(p, dict)
    s = LlamaCppSettings(n_ctx=p["n_ctx"], n_seq=p["n_seq_max"], kv_unified=bool(p["kv_unified"]),
                         n_batch=p["n_batch"], n_ubatch=p["n_ubatch"], type_k=p["type_k"], type_v=p["type_v"],
                         flash_attn=FA[p["fa"]], swa_full=bool(p["swa_full"]))  # fmt: skip
    assert plan(load_model(str(GGUF)), s).total_bytes == case["context_bytes"]
