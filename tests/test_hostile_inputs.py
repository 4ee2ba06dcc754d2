"""Arbitrary text as a spec, a deployments file or a config.json: a result or our error, never a traceback."""

from __future__ import annotations

import contextlib
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvplan.errors import KvplanError
from kvplan.sources.hf_config import config_to_metadata
from kvplan.sources.spec import load_spec_text

YAML_ATOMS = st.sampled_from(
    ["arch: llama", "arch: gemma3", "metadata:", "  block_count: 2", "  block_count: -3", "  context_length: 0",
     "  embedding_length: 64", "  attention:", "    head_count: [1, 2]", "    head_count_kv: x", "    head_count: 8",
     "    sliding_window: 4", "    sliding_window_pattern: [true, false]", "name: [a]", "params: 1e9", "- x", "{",
     "  nextn_predict_layers: 5", "  ssm: {conv_kernel: 4}", "  attention: {key_length: 0}", "\t", "!!python/object x"]
)  # fmt: skip


@settings(max_examples=300, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(YAML_ATOMS, max_size=12))
def test_specs_end_in_a_model_or_our_error(lines: list[str]) -> None:
    with contextlib.suppress(KvplanError):
        load_spec_text("\n".join(lines), "fuzz.yaml")


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**6) | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=10,
)
CONFIG_KEYS = st.sampled_from(["architectures", "hidden_size", "num_hidden_layers", "num_attention_heads",
                               "num_key_value_heads", "head_dim", "max_position_embeddings", "kv_lora_rank",
                               "qk_rope_head_dim", "text_config", "sliding_window", "layer_types"])  # fmt: skip


@settings(max_examples=300, deadline=2000)
@given(st.dictionaries(CONFIG_KEYS, JSON_VALUES | st.just(["LlamaForCausalLM"]) | st.integers(1, 64), max_size=10))
def test_configs_end_in_metadata_or_our_error(cfg: dict) -> None:
    json.dumps(cfg)
    with contextlib.suppress(KvplanError):
        config_to_metadata(cfg, "config.json")


DEPLOY_ATOMS = st.sampled_from(
    ["deployments:", "  - model: llama-3.1-8b", "  - name: a", "    ctx: 32k", "    ctx: -1", "    parallel: [1]",
     "    gpu: RTX-4090", "    memory: [24GiB, x]", "    budgets:", "      max_kv: 8GiB", "      headroom: 150%",
     "      min_ctx: 4k", "    engine: vllm", "    tp: 0", "- x", "deployments: 3", "    rs_seq: two", "{",
     "    params: eight",
     "    flash_attn: on", "    flash_attn: maybe", "    tensor_split: a,b", "    kv_unified: 3",
     "    gpu_memory_utilization: 2"]
)  # fmt: skip


@settings(max_examples=300, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(DEPLOY_ATOMS, max_size=12))
def test_deployment_files_end_in_a_list_or_our_error(tmp_path_factory, lines: list[str]) -> None:
    from kvplan.check import load_deployments

    path = tmp_path_factory.mktemp("d") / "d.yaml"
    path.write_text("\n".join(lines))
    with contextlib.suppress(KvplanError):
        load_deployments(str(path))
