"""YAML specs: the same rules as GGUF, and errors that name file, line and key."""

from __future__ import annotations

import pytest
from helpers import ORACLE

from kvplan.errors import SpecError, UnknownArchitectureError
from kvplan.runtimes.llamacpp import LlamaCppSettings, plan
from kvplan.sources.catalog import catalog_names, load_catalog_model
from kvplan.sources.gguf_source import load_gguf_model
from kvplan.sources.spec import load_spec_text

BASE = """arch: llama
metadata:
  context_length: 4096
  embedding_length: 4096
  block_count: 32
  attention:
    head_count: 32
    head_count_kv: 8
"""


def _err(text: str) -> SpecError:
    with pytest.raises(SpecError) as info:
        load_spec_text(text, "m.yaml")
    return info.value


def test_errors_name_file_line_and_key() -> None:
    e = _err(BASE.replace("head_count_kv: 8", "head_count_kv: [8, 8]"))
    assert (e.line, e.key) == (8, "metadata.attention.head_count_kv") and "expected 32" in str(e)
    e = _err(BASE.replace("head_count_kv", "head_cont_kv"))
    assert e.line == 8 and "did you mean 'attention.head_count_kv'" in str(e)
    e = _err(BASE + "colour: red\n")
    assert e.line == 9 and e.key == "colour"
    e = _err(BASE.replace("block_count: 32", "block_count: -1"))
    assert str(e).startswith("m.yaml:5: metadata.block_count")
    e = _err("arch: llama\nmetadata: [1, 2\n")
    assert "invalid YAML" in str(e)
    e = _err("")
    assert "empty" in str(e)
    e = _err(BASE.replace("arch: llama\n", ""))
    assert e.key == "arch"
    e = _err(BASE.replace("block_count: 32", "block_count: 32\n  block_count: 33"))
    assert "duplicate" in str(e)
    with pytest.raises(UnknownArchitectureError):
        load_spec_text(BASE.replace("arch: llama", "arch: llamma"), "m.yaml")


def test_missing_required_key_points_at_the_spec() -> None:
    e = _err(BASE.replace("  context_length: 4096\n", ""))
    assert "context_length" in str(e) and "requires" in str(e)


def test_spec_and_gguf_give_the_same_bytes() -> None:
    """The realistic Llama-3.1-8B GGUF and the catalog spec describe the same model."""
    s = LlamaCppSettings(n_ctx=5000, n_seq=3)
    assert (
        plan(load_catalog_model("llama-3.1-8b"), s).total_bytes
        == plan(load_gguf_model(str(ORACLE / "real" / "llama-3.1-8b.gguf")), s).total_bytes
    )
    for name in ("gemma-3-27b", "gpt-oss-20b", "qwen3-32b", "deepseek-v3", "phi-4"):
        a = plan(load_catalog_model(name), s).total_bytes
        b = plan(load_gguf_model(str(ORACLE / "real" / f"{name}.gguf")), s).total_bytes
        assert a == b, name


def test_catalog_entries_load_and_carry_sources() -> None:
    names = catalog_names()
    assert len(names) >= 30
    for name in names:
        m = load_catalog_model(name)
        assert m.spec is not None and m.spec.sources and all(m.spec.sources), name
        assert m.n_layer_all > 0 and m.n_ctx_train > 0


def test_catalog_names_and_hugging_face_ids() -> None:
    """A catalog entry is found by its name or by its Hugging Face id, in any case."""
    from kvplan.sources import load_model

    by_id = load_model("meta-llama/Llama-3.1-8B-Instruct")
    assert by_id.source == "catalog:llama-3.1-8b" == load_model("LLAMA-3.1-8B").source


def test_swa_pattern_array_and_shared_kv() -> None:
    m = load_catalog_model("gemma-3n-e4b")
    owned = [layer for layer in m.layers if layer.has_kv]
    assert len(owned) == 20  # llama.cpp hard-codes 20 KV layers for gemma3n
    assert sum(1 for layer in owned if not layer.swa) == 4


def test_moe_active_parameters() -> None:
    """An MoE's routed experts from its metadata, its active parameters from the spec (the model card's
    "N B active"), else from the experts' size; Kimi-K2's total is 1 T (the catalog once read its 32 B active)."""
    moe = BASE + "  expert_count: 8\n  expert_used_count: 2\n  expert_feed_forward_length: 14336\nparams: 46.7e9\n"
    m = load_spec_text(moe, "m.yaml")
    assert (m.n_expert, m.n_expert_used) == (8, 2)
    assert m.expert_params == 3 * 4096 * 14336 * 8 * 32  # gate, up, down × experts × MoE layers
    assert m.active_params == round(46.7e9 - 3 * 4096 * 14336 * 8 * 32 * (1 - 2 / 8))  # 12.5 B (card: 12.9 B)
    stated = load_spec_text(moe + "active_params: 12.9e9\n", "m.yaml")
    assert stated.active_params == 12_900_000_000
    assert load_spec_text(BASE + "params: 8e9\n", "m.yaml").active_params == 8_000_000_000  # dense: all
    e = _err(moe + "active_params: -3\n")
    assert e.key == "active_params" and "positive number" in str(e)
    assert load_catalog_model("qwen3-30b-a3b").active_params == 3_000_000_000
    assert load_catalog_model("kimi-k2").n_params == 1_026_408_232_448  # counted (the card says 1T)
