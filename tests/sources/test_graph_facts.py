"""The compute graph's facts from a config.json (kvplan/sources/graph_facts.py): widths a converter derives are
derived as it does (the recorded conversions prove the values: tests/sources/test_hf_conversion.py); a config whose
derivation inputs are not what the converter reads gives no graph facts — never an exception."""

from __future__ import annotations

import pytest

from kvplan.sources.graph_facts import graph_facts_from_config

_OPENELM = {"architectures": ["OpenELMForCausalLM"], "model_type": "openelm", "ffn_dim_divisor": 256,
            "model_dim": 1024, "vocab_size": 1000}  # fmt: skip


def test_openelm_width_is_the_converters_make_divisible() -> None:
    # OpenELMModel._make_divisible(0.5 * 1024, 256) = 512; 1.3 * 1024 = 1331.2 rounds to 1280 (not 10 % down)
    facts = graph_facts_from_config({**_OPENELM, "ffn_multipliers": [0.5, 4.0]})
    assert facts is not None and facts.n_ff == 512
    facts = graph_facts_from_config({**_OPENELM, "ffn_multipliers": [1.3]})
    assert facts is not None and facts.n_ff == 1280


@pytest.mark.parametrize("bad", [["x"], [True], [float("nan")], [], "abc", [1e300], [-1.0], None])
def test_openelm_multipliers_that_are_not_numbers_give_no_facts(bad: object) -> None:
    assert graph_facts_from_config({**_OPENELM, "ffn_multipliers": bad}) is None


def test_gguf_facts_for_the_newer_builders() -> None:
    """From a GGUF's keys and tensor infos: MiMo-V2's value scale (0 and 1 mean none, as its loader reads them)
    and its layers without a router; Laguna's stored gate width; HRM-Text's stacks."""
    from kvplan.sources.graph_facts import graph_facts

    base = {"general.architecture": "mimo2", "mimo2.embedding_length": 256, "mimo2.vocab_size": 100,
            "mimo2.block_count": 3, "mimo2.expert_count": 4, "mimo2.feed_forward_length": 64}  # fmt: skip
    shapes = {"token_embd.weight": (256, 100), "blk.1.ffn_gate_inp.weight": (256, 4),
              "blk.2.ffn_gate_inp.weight": (256, 4), "blk.0.attn_gate.weight": (256, 8)}  # fmt: skip
    for scale, on in ((0.0, False), (1.0, False), (0.707, True)):
        facts = graph_facts({**base, "mimo2.attention.value_scale": scale}, shapes)
        assert facts is not None and facts.attn_value_scale is on
    facts = graph_facts(base, shapes)
    assert facts is not None and facts.dense_layers == frozenset({0}) and facts.gate_width == 8
    assert graph_facts(base, {}).dense_layers == frozenset()  # type: ignore[union-attr]  # (metadata only: every layer routed)
    hrm = graph_facts({"general.architecture": "hrm_text", "hrm_text.embedding_length": 64, "hrm_text.vocab_size": 10,
                       "hrm_text.feed_forward_length": 128, "hrm_text.hrm.layers_per_stack": 2,
                       "hrm_text.hrm.h_cycles": 3, "hrm_text.hrm.l_cycles": 1}, {})  # fmt: skip
    assert hrm is not None and hrm.hrm == (2, 3, 1)


def test_the_vocabulary_as_llama_cpp_loads_it() -> None:
    """The token embeddings' rows where the file has them; else the tokenizer's token count — llama_vocab::load
    reads <arch>.vocab_size only for a "no_vocab" tokenizer (the harness's metadata-only files)."""
    from kvplan.sources.graph_facts import graph_facts
    from kvplan.sources.values import ArrayValue

    kv = {"general.architecture": "llama", "llama.embedding_length": 64, "llama.feed_forward_length": 128,
          "llama.vocab_size": 50304, "tokenizer.ggml.tokens": ArrayValue(8, 128, None)}  # fmt: skip
    assert graph_facts({**kv, "tokenizer.ggml.model": "gpt2"}, {}).n_vocab == 128  # type: ignore[union-attr]
    assert graph_facts({**kv, "tokenizer.ggml.model": "no_vocab"}, {}).n_vocab == 50304  # type: ignore[union-attr]
    assert graph_facts(kv, {"token_embd.weight": (64, 32000)}).n_vocab == 32000  # type: ignore[union-attr]


def test_clamped_swiglu_layers() -> None:
    """swiglu_clamp_exp / _shexp: the layers whose limit is above llama.cpp's 1e-6 (BailingMoE 3's first layer has
    none); a single value clamps every layer."""
    from kvplan.sources.graph_facts import graph_facts
    from kvplan.sources.values import ArrayValue

    kv = {"general.architecture": "bailingmoe3", "bailingmoe3.embedding_length": 64, "bailingmoe3.vocab_size": 10,
          "bailingmoe3.feed_forward_length": 128, "bailingmoe3.swiglu_clamp_exp": ArrayValue(6, 3, (0.0, 4.0, 1e-7)),
          "bailingmoe3.swiglu_clamp_shexp": 5.0}  # fmt: skip
    facts = graph_facts(kv, {})
    assert facts is not None and facts.clamp_exp == frozenset({1}) and 2 in facts.clamp_shexp
