"""Parameters counted from the architecture (kvplan.sources.param_count) against published counts."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kvplan.model import ModelDescription
from kvplan.sources.catalog import catalog_names, load_catalog_model
from kvplan.sources.hf_config import load_hf_config
from kvplan.sources.param_count import count_params
from kvplan.sources.spec import spec_parts

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SPECS = Path(__file__).resolve().parents[2] / "model_specs"


def _published() -> list[tuple[str, int, dict[str, object]]]:
    out = []
    for name in catalog_names():
        path = SPECS / f"{name}.yaml"
        block = spec_parts(path.read_text(), str(path)).checkpoint or {}
        pub = block.get("published")
        if isinstance(pub, dict) and "config" in block:
            out.append((name, int(pub["params"]), block["config"]))  # type: ignore[arg-type]
    return out


PUBLISHED = _published()


def test_published_counts_are_many() -> None:
    """21 catalog checkpoints carry a count another project published (Keras Hub's presets) next to a config."""
    assert len(PUBLISHED) == 21


@pytest.mark.parametrize(("name", "published", "config"), PUBLISHED, ids=[p[0] for p in PUBLISHED])
def test_count_equals_the_published_count(name: str, published: int, config: dict[str, object]) -> None:
    counted = count_params(config)
    assert counted is not None and counted.total == published


def test_every_catalog_count_is_exact_or_says_it_is_rounded() -> None:
    """A catalog model's parameters are counted from its config, published, or the model card's rounded figure
    (and then the answer says so)."""
    for name in catalog_names():
        m = load_catalog_model(name)
        assert m.n_params, name
        assert m.params_source.startswith(("counted from", "published: ", "the model card's figure, rounded")), name
        if m.param_count is not None:
            assert m.n_params == m.param_count.total, name


def test_hand_worked_llama() -> None:
    """2 layers, hidden 8, 2 heads of 4, 1 KV head, FFN 16, vocabulary 10, separate head, by hand: embedding 80
    + head 80 + final norm 8 + per layer (q 64 + k 32 + v 32 + o 64 + MLP 3 × 128 + norms 16 = 592) = 1,352."""
    cfg = {"model_type": "llama", "hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2,
           "num_key_value_heads": 1, "intermediate_size": 16, "vocab_size": 10}  # fmt: skip
    counted = count_params(cfg)
    assert counted is not None
    assert counted.total == 80 + 80 + 8 + 2 * (64 + 32 + 32 + 64 + 3 * 128 + 16) == 1352
    tied = count_params({**cfg, "tie_word_embeddings": True})
    assert tied is not None and tied.total == 1352 - 80 and tied.output == 0


#: llama.cpp's own count of a GGUF converted from the checkpoint (print_info "model params", to 0.001 B), in public
#: startup logs: every tensor of the checkpoint, MTP layer included, one to one
LLAMA_CPP_COUNTS = {
    "glm-4.6": (356.786, "https://github.com/ikawrakow/ik_llama.cpp/discussions/816: GLM-4.6 IQ5_K, 1,759 tensors"),
    "glm-4.5": (358.338, "https://github.com/ikawrakow/ik_llama.cpp/pull/668: the BF16 conversion of zai-org/GLM-4.5"),
    "glm-4.5-air": (110.469, "https://github.com/ikawrakow/ik_llama.cpp/pull/677: GLM-4.5-Air IQ5_K, 803 tensors"),
}


#: llama.cpp's exact count (the converter's general.parameter_count, or its sum over a GGUF's tensor table) of a GGUF
#: converted from the checkpoint, as public records give it: tests/fixtures/checkpoints/NAME/SOURCES.md says which
LLAMA_CPP_EXACT = {
    "granite-4.0-h-micro": 3_191_396_096,
    "granite-4.0-h-small": 32_207_337_984,
    "minimax-m2": 228_689_764_864,
}
#: exact counts a public study of 2024's checkpoints states (tests/fixtures/checkpoints/jamba-1.5-large/SOURCES.md):
#: two kvplan proves from published configs, and Jamba 1.5 Large, whose config no reachable source copies
STUDY_EXACT = {"llama-3.1-405b": 405_853_388_800, "llama-3.1-70b": 70_553_706_496, "jamba-1.5-large": 398_555_145_696}


@pytest.mark.parametrize("name", sorted(STUDY_EXACT))
def test_catalog_count_equals_a_public_studys_exact_count(name: str) -> None:
    assert load_catalog_model(name).n_params == STUDY_EXACT[name]


def _block_scales(m: ModelDescription) -> int:
    """The float32 scales an FP8 checkpoint stores beside its linear weights: one per 128 × 128 block of each
    quantized linear kvplan counts (the router and the head stay bf16)."""
    assert m.param_count is not None
    return sum(
        x.count * -(-x.out_features // 128) * -(-x.in_features // 128) for x in m.param_count.linears if x.quantized
    )


def test_deepseek_v3s_hub_count_is_kvplans_with_its_block_scales() -> None:
    """DeepSeek-V3's Hub count, 684,531,386,000 (its MTP module and FP32 block scales included, as the same study and
    a public table of Hub models give it), is kvplan's count plus one scale per 128 × 128 block of each FP8 linear."""
    m = load_catalog_model("deepseek-v3")
    scales = _block_scales(m)
    assert scales == 41_540_496 and m.n_params + scales == 684_531_386_000


@pytest.mark.parametrize("name", sorted(LLAMA_CPP_EXACT))
def test_catalog_count_equals_llama_cpps_exact_count(name: str) -> None:
    """The three configs written from cards and quotes (no verbatim copy reachable) count what llama.cpp counts."""
    m = load_catalog_model(name)
    assert m.params_source.startswith("counted from") and m.n_params == LLAMA_CPP_EXACT[name]
    assert str(LLAMA_CPP_EXACT[name]) in (FIXTURES / "checkpoints" / name / "SOURCES.md").read_text().replace(",", "")


def test_minimax_m2_count_and_m25s_hub_count_differ_by_its_block_scales() -> None:
    """MiniMax-M2.5's Hub count, 228,703,644,928, is kvplan's M2 count plus one float32 scale per 128 × 128 block of
    every FP8 linear (the router and the head are not FP8): no MTP tensors in the family's shards."""
    m = load_catalog_model("minimax-m2")
    scales = _block_scales(m)
    assert m.n_params + scales == 228_703_644_928


@pytest.mark.parametrize("name", sorted(LLAMA_CPP_COUNTS))
def test_catalog_count_equals_llama_cpps_count_of_the_converted_checkpoint(name: str) -> None:
    m = load_catalog_model(name)
    assert m.params_source.startswith("counted from") and m.param_count is not None
    assert round(m.n_params / 1e9, 3) == LLAMA_CPP_COUNTS[name][0]


def test_hand_worked_qwen3_next() -> None:
    """4 layers (3 gated delta-net, then 1 gated attention) + the MTP block, hidden 8, vocabulary 10, by hand:
    a delta-net layer: in_proj_qkvz (2·4 + 2·8) × 8 = 192, in_proj_ba 4 × 8 = 32, out_proj 64, conv1d 16 × 4 = 64,
    dt_bias 2 + A_log 2, norm 4 → 360; an attention layer (the MTP's too): q (with its gate) 16 × 8 = 128, k 32,
    v 32, o 64, q/k norms 8 → 264; every layer: norms 16, router 16, experts 2 × 3 × 32 = 192, shared expert 96,
    its gate 8 → 328; embedding 80, head 80, final norm 8; MTP fc 128 and three norms 24."""
    cfg = {"model_type": "qwen3_next", "hidden_size": 8, "num_hidden_layers": 4, "num_attention_heads": 2,
           "num_key_value_heads": 1, "head_dim": 4, "intermediate_size": 16, "vocab_size": 10,
           "linear_num_key_heads": 1, "linear_num_value_heads": 2, "linear_key_head_dim": 4,
           "linear_value_head_dim": 4, "linear_conv_kernel_dim": 4, "num_experts": 2, "moe_intermediate_size": 4,
           "shared_expert_intermediate_size": 4}  # fmt: skip
    counted = count_params(cfg)
    assert counted is not None
    assert counted.total == 3 * 360 + 2 * 264 + 5 * 328 + 80 + 80 + 8 + 128 + 24 == 3568
    no_mtp = count_params({**cfg, "mtp_num_hidden_layers": 0})
    assert no_mtp is not None and no_mtp.total == 3568 - 264 - 328 - 152


def test_gpt_oss_published_config_counts_its_keras_figure() -> None:
    m = load_hf_config(str(FIXTURES / "checkpoints" / "gpt-oss-20b"))
    assert m.n_params == 20_914_757_184
    assert m.param_count is not None and m.param_count.expert_params == 19_110_297_600
    assert m.weight_format is not None and m.weight_format.kind == "mxfp4"


#: transformers' own model classes, instantiated on the meta device for each config
#: (scripts/params/record_transformers_counts.py)
TRANSFORMERS = json.loads((FIXTURES / "param_counts.json").read_text())


def _without_mtp(config: dict[str, object]) -> dict[str, object]:
    """transformers builds no MTP layers (DeepSeek-V3, GLM-4.5, Qwen3-Next): count the config without them."""
    out = dict(config)
    if "num_nextn_predict_layers" in out:
        out["num_nextn_predict_layers"] = 0
    if out.get("model_type") == "qwen3_next":
        out["mtp_num_hidden_layers"] = 0
    return out


def test_the_transformers_recording_covers_every_family_kvplan_counts() -> None:
    cases = TRANSFORMERS["cases"]
    counted = {c["config"].get("model_type") for c in cases.values()}
    assert {"cohere", "falcon_mamba", "mamba2", "falcon_h1", "granitemoehybrid", "jamba", "minimax_m1",
            "minimax_m2", "llama4", "llama4_text", "mistral3", "llama", "qwen3_moe", "deepseek_v3", "glm4_moe",
            "qwen3_next", "gemma3", "gpt_oss", "phi3"} <= counted  # fmt: skip
    assert not [name for name, c in cases.items() if "error" in c]
    assert len(cases) >= 119


@pytest.mark.parametrize("name", sorted(TRANSFORMERS["cases"]))
def test_count_equals_transformers_own_model_class(name: str) -> None:
    """Every catalog config, every published config and small configs of every family: kvplan's count equals the
    parameters transformers' model class holds for the same config."""
    case = TRANSFORMERS["cases"][name]
    counted = count_params(_without_mtp(case["config"]))
    assert counted is not None and counted.total == case["params"]


VERBATIM = sorted(p.parent.name for p in (FIXTURES / "checkpoints").glob("*/config.json"))


@pytest.mark.parametrize("name", VERBATIM)
def test_a_published_config_counts_the_catalogs_figure(name: str) -> None:
    """tests/fixtures/checkpoints/NAME/config.json is the checkpoint's config.json byte for byte (SOURCES.md there
    says from where): read as a user's config.json, it gives the catalog's count."""
    assert name in catalog_names()
    m = load_hf_config(str(FIXTURES / "checkpoints" / name))
    catalog = load_catalog_model(name)
    assert catalog.params_source.startswith("counted from")
    assert m.n_params == catalog.n_params


def test_command_r_config_is_what_llama_cpps_conversion_states() -> None:
    """Command-R's config.json is written from llama.cpp's vocabulary GGUF of the checkpoint: every shape agrees."""
    folder = FIXTURES / "checkpoints" / "command-r-v01"
    kv = json.loads((folder / "ggml-vocab-command-r.kv.json").read_text())
    cfg = json.loads((folder / "config.json").read_text())
    assert kv["general.architecture"] == "command-r"
    assert (cfg["num_hidden_layers"], cfg["hidden_size"], cfg["intermediate_size"]) == (
        kv["command-r.block_count"], kv["command-r.embedding_length"], kv["command-r.feed_forward_length"])  # fmt: skip
    assert (cfg["num_attention_heads"], cfg["num_key_value_heads"]) == (
        kv["command-r.attention.head_count"], kv["command-r.attention.head_count_kv"])  # fmt: skip
    assert cfg["vocab_size"] == kv["tokenizer.ggml.tokens (length)"] == 256_000
    assert (
        cfg["model_max_length"] == kv["command-r.context_length"] and cfg["logit_scale"] == kv["command-r.logit_scale"]
    )


def _tensors_in_index(name: str, weight_map: dict[str, str]) -> int:
    """How many tensors of the index a Linear named ``name`` (``*`` for the layer; an expert's ``experts.X``)
    stands for."""
    pattern = re.escape(name).replace(r"\*", r"\d+").replace(r"experts\.", r"experts\.\d+\.") + r"\.weight"
    return sum(1 for key in weight_map if re.fullmatch(pattern, key))


def test_minimax_m1_count_reconciles_the_published_safetensors_index() -> None:
    """MiniMax-M1's official index: 8,243 tensors, total_size 912,210,767,872 bytes. kvplan counts 456,089,655,296
    parameters; as bf16 that is 31,457,280 bytes short, exactly the 80 routers (32 × 6,144) kept in f32; and every
    linear weight kvplan counts is in the index as many times as it counts it."""
    index = json.loads((FIXTURES / "checkpoints" / "minimax-m1" / "model.safetensors.index.json").read_text())
    weight_map = index["weight_map"]
    counted = count_params(json.loads((FIXTURES / "checkpoints" / "minimax-m1" / "config.json").read_text()))
    assert counted is not None and counted.total == 456_089_655_296
    routers = 80 * 32 * 6144
    assert index["metadata"]["total_size"] == 2 * counted.total + 2 * routers
    assert len(weight_map) == 8243
    for linear in counted.linears:
        assert _tensors_in_index(linear.name, weight_map) == linear.count, linear.name
    # the tensors that are not linear weights: the embedding, 80 × 2 layer norms, 70 lightning norms, final norm
    linear_tensors = sum(x.count for x in counted.linears)
    assert len(weight_map) - linear_tensors == 1 + 160 + 70 + 1


def test_the_engine_configs_count_mistral_as_published() -> None:
    """tests/fixtures/engines/configs/mistral-7b-v0.1 (KV fields sourced, the rest transformers' defaults = the
    checkpoint's): Keras Hub's mistral_7b_en states 7,241,732,096."""
    assert load_hf_config(str(FIXTURES / "engines" / "configs" / "mistral-7b-v0.1")).n_params == 7_241_732_096


@pytest.mark.parametrize(
    "config",
    [
        {},
        {"model_type": "llama"},
        {
            "model_type": "llama",
            "hidden_size": -1,
            "num_hidden_layers": 2,
            "num_attention_heads": 1,
            "intermediate_size": 1,
            "vocab_size": 1,
        },
        {
            "model_type": "llama",
            "hidden_size": True,
            "num_hidden_layers": 2,
            "num_attention_heads": 1,
            "intermediate_size": 1,
            "vocab_size": 1,
        },
        {
            "model_type": "llama",
            "hidden_size": "8",
            "num_hidden_layers": 2,
            "num_attention_heads": 1,
            "intermediate_size": 1,
            "vocab_size": 1,
        },
        {"model_type": "mamba", "hidden_size": 8},
        {"model_type": ["llama"]},
    ],
)
def test_configs_it_cannot_count_answer_none(config: dict[str, object]) -> None:
    assert count_params(json.loads(json.dumps(config))) is None


_KEYS = ("model_type", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
         "intermediate_size", "vocab_size", "tie_word_embeddings", "attention_bias", "moe_intermediate_size",
         "num_experts", "num_local_experts", "decoder_sparse_step", "mlp_only_layers", "first_k_dense_replace",
         "n_routed_experts", "n_shared_experts", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
         "qk_rope_head_dim", "v_head_dim", "num_nextn_predict_layers", "text_config", "vision_config",
         "quantization_config", "torch_dtype", "rope_scaling", "rope_parameters", "model_max_length",
         "max_position_embeddings", "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
         "linear_value_head_dim", "linear_conv_kernel_dim", "shared_expert_intermediate_size", "layer_types",
         "full_attention_interval", "mtp_num_hidden_layers")  # fmt: skip


def _hostile_values():  # type: ignore[no-untyped-def]
    from hypothesis import strategies as st

    leaf = st.one_of(
        st.none(), st.booleans(), st.integers(-(1 << 70), 1 << 70), st.floats(allow_nan=True),
        st.text(max_size=20), st.sampled_from(["llama", "qwen3_moe", "gpt_oss", "deepseek_v3", "gemma3", "qwen3_next",
                                               "mxfp4", "fp8", "awq", "gptq", "compressed-tensors", "longrope",
                                               "yarn"]),
    )  # fmt: skip
    names = st.sampled_from((*_KEYS, "quant_method", "weight_block_size", "config_groups", "weights", "num_bits",
                             "type", "group_size", "factor", "rope_type", "modules_to_not_convert"))  # fmt: skip
    return st.recursive(
        leaf, lambda kids: st.lists(kids, max_size=4) | st.dictionaries(names, kids, max_size=6), max_leaves=30
    )


def test_hostile_configs_never_raise() -> None:
    """Any JSON a config.json could hold: the counter, the format reader and vLLM's context reader answer (None,
    a format, context facts) and never raise or loop over a huge layer count."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from kvplan.facts.vllm_context import context_keys
    from kvplan.sources.weight_format import read_weight_format

    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.dictionaries(st.sampled_from(_KEYS), _hostile_values(), max_size=12))
    def check(cfg: dict[str, object]) -> None:
        count_params(cfg)
        read_weight_format(cfg, "config.json")
        context_keys(cfg)

    check()
    huge = {"model_type": "qwen3_moe", "hidden_size": 8, "num_hidden_layers": 1 << 30, "num_attention_heads": 1,
            "intermediate_size": 1, "vocab_size": 1, "moe_intermediate_size": 1, "num_experts": 1}  # fmt: skip
    assert count_params(huge) is None  # refused before a loop over 2^30 layers


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ("checkpoint: {format: q4}", "checkpoint.format: expected one of bf16, fp16, fp32, mxfp4, fp8"),
        ("checkpoint: {fromat: bf16}", "checkpoint.fromat: unknown key"),
        ("checkpoint: {format: fp8, block: [128]}", "checkpoint.block: expected two sizes"),
        ("checkpoint: {config: {model_type: mamba}}", "checkpoint.config: not a config.json whose parameters"),
        ("checkpoint: [1, 2]", "checkpoint: must be a mapping"),
        (
            "params: 1000\ncheckpoint: {config: {model_type: llama, hidden_size: 8, num_hidden_layers: 2, "
            "num_attention_heads: 2, num_key_value_heads: 1, intermediate_size: 16, vocab_size: 10}}",
            "params: 1,000 disagrees with the 1,352 counted from checkpoint.config",
        ),
    ],
)
def test_a_spec_checkpoint_block_is_checked(tmp_path: Path, block: str, message: str) -> None:
    from helpers import kv

    spec = tmp_path / "m.yaml"
    spec.write_text("arch: llama\nmetadata:\n  context_length: 4096\n  embedding_length: 8\n  block_count: 2\n"
                    "  attention: {head_count: 2, head_count_kv: 1}\n" + block + "\n")  # fmt: skip
    r = kv("estimate", str(spec))
    assert r.exit_code == 3 and message in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_the_catalog_listing_says_which_counts_are_exact() -> None:
    from helpers import kv

    rows = {r["name"]: r for r in kv("models", "-o", "json").json()["models"]}
    assert rows["gpt-oss-20b"]["params"] == 20_914_757_184 and rows["gpt-oss-20b"]["params_exact"] is True
    assert rows["gpt-oss-20b"]["weights"] == "mxfp4" and rows["deepseek-v3"]["weights"] == "fp8"
    assert rows["olmo-2-7b"]["weights"] == "fp32" and rows["llama-2-7b"]["weights"] == "fp16"
    assert rows["command-r-v01"]["params"] == 34_980_831_232 and rows["command-r-v01"]["params_exact"] is True
    # Falcon-H1 7B: counted from the config a fact sheet quotes, equal to the Hub's own count of its safetensors
    assert rows["falcon-h1-7b"]["params"] == 7_585_654_880 and rows["falcon-h1-7b"]["params_exact"]
    # Granite 4.0 H Small: counted from the card's shapes, equal to llama.cpp's sum over its GGUF's tensors
    assert rows["granite-4.0-h-small"]["params"] == 32_207_337_984 and rows["granite-4.0-h-small"]["params_exact"]
    assert rows["jamba-1.5-large"]["params"] == 398_555_145_696 and rows["jamba-1.5-large"]["params_exact"]
    assert rows["falcon-h1-34b"]["params"] == 33_642_516_224 and rows["falcon-h1-34b"]["params_exact"]
    assert all(r["params_exact"] for r in rows.values()) and len(rows) == 70
    assert rows["granite-4.0-h-tiny"]["params"] == 6_939_037_248 and rows["granite-4.0-h-tiny"]["params_exact"]
    # Qwen3-Next: counted with its MTP block (81.32 B; the trunk alone 79.67 B); Kimi-K2 ships block FP8
    assert rows["qwen3-next-80b-a3b"]["params"] == 81_324_862_720 and rows["qwen3-next-80b-a3b"]["params_exact"]
    assert rows["kimi-k2"]["weights"] == "fp8"
    table = kv("models").stdout
    assert (
        "≈" not in table
        and "398.56 B" in table
        and "32.21 B" in table
        and "34.98 B" in table
        and "20.91 B" in table
        and "7.59 B" in table
    )


def test_granite_h_tiny_config_is_what_its_gguf_dump_states() -> None:
    """Granite 4.0 H Tiny's config.json is written from a gguf-dump of its conversion: the shapes agree, and the
    666 tensors are 40 layers of 9 + 36 Mamba-2 mixers of 8 + 4 attention blocks of 4 + token_embd and output_norm."""
    folder = FIXTURES / "checkpoints" / "granite-4.0-h-tiny"
    dump = (folder / "gguf-dump.txt").read_text()
    cfg = json.loads((folder / "config.json").read_text())

    def kv(key: str) -> str:
        found = re.search(rf"{re.escape(key)} = (\S+)", dump)
        assert found, key
        return found.group(1)

    assert int(kv("granitehybrid.embedding_length")) == cfg["hidden_size"] == 1536
    assert int(kv("granitehybrid.feed_forward_length")) == cfg["intermediate_size"]
    assert int(kv("granitehybrid.expert_shared_feed_forward_length")) == cfg["shared_intermediate_size"]
    assert int(kv("granitehybrid.vocab_size")) == cfg["vocab_size"]
    assert int(kv("granitehybrid.ssm.inner_size")) == cfg["mamba_n_heads"] * cfg["mamba_d_head"]
    assert int(kv("granitehybrid.ssm.time_step_rank")) == cfg["mamba_n_heads"]
    assert int(kv("granitehybrid.ssm.state_size")) == cfg["mamba_d_state"]
    assert int(kv("granitehybrid.ssm.group_count")) == cfg["mamba_n_groups"]
    assert "1536,   512,    64,     1 | Q4_0    | blk.0.ffn_gate_exps.weight" in dump and cfg["num_local_experts"] == 64
    attention = cfg["layer_types"].count("attention")
    n = cfg["num_hidden_layers"]
    assert int(kv("GGUF.tensor_count")) == 9 * n + 8 * (n - attention) + 4 * attention + 2 == 666
    counted = count_params(cfg)
    assert counted is not None and counted.total == 6_939_037_248


def test_the_listing_names_a_parallel_hybrids_attention() -> None:
    """Falcon-H1's layers are Mamba-2 and attention at once (recurrent, with KV heads): the listing says GQA, as
    for Jamba's attention layers, not "none" — and a hybrid whose recurrent layers hold no KV keeps its attention
    layers' kind."""
    from helpers import kv

    rows = {r["name"]: r for r in kv("models", "-o", "json").json()["models"]}
    assert rows["falcon-h1-7b"]["attention"] == rows["falcon-h1-34b"]["attention"] == "GQA (hybrid)"
    assert rows["jamba-1.5-mini"]["attention"] == "GQA (hybrid)"
    assert rows["falcon-mamba-7b"]["attention"] == "none (recurrent)"
