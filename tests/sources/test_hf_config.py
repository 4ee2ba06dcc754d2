"""Hugging Face config.json input: mapped to the GGUF keys llama.cpp's converter writes, then checked
against what llama.cpp allocated for the realistic GGUF of the same model (the oracle fixtures)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import FIXTURES, kv, oracle_cases

from kvplan.errors import KvplanError
from kvplan.runtimes.llamacpp import LlamaCppSettings, plan
from kvplan.sources import load_model

HF = FIXTURES / "hf"
FA = {-1: "auto", 0: "off", 1: "on"}


@pytest.mark.parametrize("name", sorted(p.name for p in HF.iterdir()))
def test_config_equals_llama_cpp_on_the_converted_model(name: str) -> None:
    model = load_model(str(HF / name))  # a folder with config.json
    cases = [c for c in oracle_cases()["cases"] if c["gguf"] == f"real/{name}.gguf"]
    assert len(cases) > 40, name
    for case in cases:
        p = case["params"]
        s = LlamaCppSettings(
            n_ctx=p["n_ctx"],
            n_seq=p["n_seq_max"],
            kv_unified=bool(p["kv_unified"]),
            n_batch=p["n_batch"],
            n_ubatch=p["n_ubatch"],
            type_k=p["type_k"],
            type_v=p["type_v"],
            flash_attn=FA[p["fa"]],
            swa_full=bool(p["swa_full"]),
            n_rs_seq=p["n_rs_seq"],
            mtp=bool(p["mtp"]),
        )
        try:
            got = plan(model, s)
        except KvplanError:
            assert "error" in case, case["id"]
            continue
        assert "context_bytes" in case, case["id"]
        assert got.total_bytes == case["context_bytes"], case["id"]


def test_config_file_and_cli(tmp_path: Path) -> None:
    r = kv(*["estimate", str(HF / "llama-3.1-8b" / "config.json"), "-c", "4096", "-o", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["model"]["source_kind"] == "hf-config" and doc["memory"]["total_bytes"] == 536870912


def test_config_errors_name_the_field(tmp_path: Path) -> None:
    cases = {
        "no-arch.json": ({"hidden_size": 8}, "'architectures' is missing"),
        "unknown.json": ({"architectures": ["FooForCausalLM"]}, "'FooForCausalLM' is not one kvplan maps"),
        "no-layers.json": (
            {
                "architectures": ["LlamaForCausalLM"],
                "hidden_size": 4096,
                "num_attention_heads": 32,
                "max_position_embeddings": 8192,
            },
            "num_hidden_layers",
        ),
        "bad-heads.json": (
            {
                "architectures": ["LlamaForCausalLM"],
                "hidden_size": 4096,
                "num_hidden_layers": 2,
                "num_attention_heads": "32",
                "max_position_embeddings": 8192,
            },
            "num_attention_heads",
        ),
        "mla.json": (
            {
                "architectures": ["DeepseekV3ForCausalLM"],
                "hidden_size": 7168,
                "num_hidden_layers": 2,
                "num_attention_heads": 8,
                "max_position_embeddings": 4096,
            },
            "kv_lora_rank",
        ),
    }
    for fname, (cfg, message) in cases.items():
        f = tmp_path / fname
        f.write_text(json.dumps(cfg))
        r = kv(*["estimate", str(f), "-c", "4096"])
        assert r.exit_code == 3 and message in r.stderr, (fname, r.stderr)
    (tmp_path / "broken.json").write_text("{not json")
    r = kv(*["estimate", str(tmp_path / "broken.json")])
    assert r.exit_code == 3 and "not valid JSON" in r.stderr
