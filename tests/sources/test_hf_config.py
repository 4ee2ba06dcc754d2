"""Hugging Face config.json input: mapped to the GGUF keys llama.cpp's converter writes, then checked
against what llama.cpp allocated for the realistic GGUF of the same model (the oracle fixtures)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from graph_cases import settings_of
from helpers import FIXTURES, kv, oracle_cases

from kvplan.errors import KvplanError
from kvplan.runtimes.llamacpp import plan
from kvplan.sources import load_model

HF = FIXTURES / "hf"


@pytest.mark.parametrize("name", sorted(p.name for p in HF.iterdir()))
def test_config_equals_llama_cpp_on_the_converted_model(name: str) -> None:
    model = load_model(str(HF / name))  # a folder with config.json
    cases = [c for c in oracle_cases()["cases"] if c["gguf"] == f"real/{name}.gguf"]
    assert len(cases) > 40, name
    for case in cases:
        p = case["params"]
        s = settings_of(p)
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
            "qk_rope_head_dim",  # kv_lora_rank defaults to 512 (DeepseekV2Model)
        ),
    }
    for fname, (cfg, message) in cases.items():
        f = tmp_path / fname
        f.write_text(json.dumps(cfg))
        r = kv(*["estimate", str(f), "-c", "4096"])
        assert r.exit_code == 3 and message in r.stderr, (fname, r.stderr)
    (tmp_path / "unknown.json").write_text(json.dumps({"architectures": ["FooForCausalLM"]}))
    r = kv(*["estimate", str(tmp_path / "unknown.json")])  # an unknown architecture: exit 4, as for a GGUF
    assert r.exit_code == 4 and "'FooForCausalLM' is not one llama.cpp's converter registers" in r.stderr
    (tmp_path / "broken.json").write_text("{not json")
    r = kv(*["estimate", str(tmp_path / "broken.json")])
    assert r.exit_code == 3 and "not valid JSON" in r.stderr


ENGINE_CONFIGS = FIXTURES / "engines" / "configs"


@pytest.mark.parametrize(
    ("name", "gguf", "skip"),
    [
        ("falcon-h1-7b", "falcon-h1-7b-shape", ()),
        # the shape GGUF keeps llama.cpp's converter's 2^20 context; the config says 131072 (only n_ctx 0 differs)
        ("granite-4.0-h-small", "granite-4.0-h-small-shape", ("n_ctx=0",)),
    ],
)
def test_hybrid_configs_equal_llama_cpp_on_the_shape_gguf(name: str, gguf: str, skip: tuple[str, ...]) -> None:
    """Falcon-H1 and Granite-4.0-H configs read as llama.cpp's converter writes them: every oracle setting of the
    realistic-shape GGUF of the same dimensions gives the same bytes."""
    model = load_model(str(ENGINE_CONFIGS / name))
    cases = [c for c in oracle_cases()["cases"] if c["gguf"] == f"real/{gguf}.gguf"]
    assert len(cases) > 40
    checked = 0
    for case in cases:
        p = case["params"]
        if "n_ctx=0" in skip and p["n_ctx"] == 0:
            continue
        s = settings_of(p)
        try:
            got: object = plan(model, s).total_bytes
        except KvplanError:
            got = "error"
        assert got == case.get("context_bytes", "error"), case["id"]
        checked += 1
    assert checked > 40


def test_new_hybrid_families_by_hand() -> None:
    """Nemotron-H (M / * / - pattern), LFM2 (conv layers), Kimi-Linear (MLA on full_attn_layers, KDA else)."""
    n = load_model(str(ENGINE_CONFIGS / "nemotron-h-8b"))
    attn = [la.index for la in n.layers if la.n_head_kv]
    mamba = [la.index for la in n.layers if la.recurrent]
    assert attn == [7, 18, 29, 40] and len(mamba) == 24 and n.recurrent_params is not None
    assert (n.recurrent_params.d_inner, n.recurrent_params.n_head, n.recurrent_params.n_group) == (8192, 128, 8)
    lfm = load_model(str(ENGINE_CONFIGS / "lfm2-1.2b"))
    assert [la.index for la in lfm.layers if la.n_head_kv] == [2, 5, 8, 10, 12, 14]
    assert lfm.recurrent_params is not None and lfm.recurrent_params.l_cache == 3
    kimi = load_model(str(ENGINE_CONFIGS / "kimi-linear-48b-a3b"))
    assert kimi.mla and [la.index + 1 for la in kimi.layers if la.n_head_kv] == [4, 8, 12, 16, 20, 24, 27]
    assert kimi.recurrent_params is not None and kimi.recurrent_params.kda_head == 128
    gemma = load_model(str(ENGINE_CONFIGS / "gemma-3-4b"))  # head counts left to Gemma3TextConfig's defaults
    assert (gemma.layers[0].n_head, gemma.layers[0].n_head_kv, gemma.layers[0].head_k) == (8, 4, 256)
    assert gemma.mm_prefix_lm
    phi = load_model(str(ENGINE_CONFIGS / "phi-3-mini-4k"))  # llama.cpp ignores the window, vLLM applies it
    assert phi.swa_type.value == "none" and phi.declared_window == 2047
    assert load_model(str(ENGINE_CONFIGS / "qwen2.5-7b")).declared_window == 0  # use_sliding_window false


def test_a_config_without_a_context_takes_c(tmp_path: Path) -> None:
    """No context key: the converted GGUF would have none (llama.cpp refuses it); kvplan asks for -c, and the
    serving engines take their 2048 default (vLLM's _get_and_verify_max_len)."""
    cfg = {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "num_attention_heads": 32,
           "num_key_value_heads": 8, "num_hidden_layers": 32}  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    r = kv(*["estimate", str(tmp_path / "config.json")])
    assert r.exit_code == 2 and "states no context length" in r.stderr and "-c" in r.stderr
    r = kv(*["estimate", str(tmp_path / "config.json"), "-c", "4096", "-o", "json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["memory"]["total_bytes"] == 536870912
    m = load_model(str(tmp_path))
    assert m.n_ctx_train == 0 and not m.ctx_declared and m.engine_ctx == 2048


def test_the_engines_read_the_configs_context_where_llama_cpp_writes_its_own() -> None:
    """Granite-4.0-H converts with context_length 2^20 (no RoPE); vLLM and SGLang read max_position_embeddings."""
    m = load_model(str(ENGINE_CONFIGS / "granite-4.0-h-tiny"))
    assert m.n_ctx_train == 1 << 20 and m.config_ctx == 131072 == m.engine_ctx


def test_an_unproven_architecture_says_so(tmp_path: Path) -> None:
    """GraniteSwitch has no recorded conversion (the converter needs more than its config): the estimate says so."""
    from kvplan.facts.hf_archs import CONVERTED_ARCHS

    assert "graniteswitch" not in CONVERTED_ARCHS and "llama" in CONVERTED_ARCHS
    cfg = {
        "architectures": ["GraniteSwitchForCausalLM"],
        "hidden_size": 1024,
        "num_attention_heads": 16,
        "num_key_value_heads": 4,
        "num_hidden_layers": 4,
        "max_position_embeddings": 4096,
    }
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    doc = kv("estimate", str(tmp_path), "-o", "json").json()
    assert any("no recorded conversion proves" in n for n in doc["notes"]), doc["notes"]
    llama = kv("estimate", str(HF / "llama-3.1-8b"), "-c", "4096", "-o", "json").json()
    assert not any("no recorded conversion" in n for n in llama["notes"])


@pytest.mark.parametrize(
    ("name", "chunk"),
    [("nemotron-h-8b", 128), ("falcon-h1-7b", 128), ("granite-4.0-h-tiny", 256), ("qwen3-next-80b-a3b", 0)],
)
def test_the_ssm_kernels_chunk_is_read_where_the_config_states_it(name: str, chunk: int) -> None:
    """SGLang checkpoints a Mamba state on the config's chunk (Nemotron-H's chunk_size, Falcon-H1's and Granite
    4.0-H's mamba_chunk_size); a gated delta-net's config states none (SGLang takes FLA's 64)."""
    model = load_model(str(FIXTURES / "engines" / "configs" / name / "config.json"))
    assert model.recurrent_params is not None and model.recurrent_params.chunk == chunk


@pytest.mark.parametrize(
    ("name", "chunk"),
    [("falcon-h1-34b", 128), ("falcon-h1-7b", 256), ("mamba-codestral-7b", 256), ("granite-4.0-h-tiny", 0)],
)
def test_a_catalog_checkpoints_chunk_is_its_configs(name: str, chunk: int) -> None:
    """The catalog keeps the chunk its checkpoint's config states (checkpoint.config: Falcon-H1 34B's published
    config says 128, not SGLang's class default 256); a spec whose config states none keeps 0 (SGLang's default)."""
    from kvplan.sources.catalog import load_catalog_model

    model = load_catalog_model(name)
    assert model.recurrent_params is not None and model.recurrent_params.chunk == chunk
