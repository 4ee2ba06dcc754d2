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
    [
        "arch: llama",
        "arch: gemma3",
        "metadata:",
        "  block_count: 2",
        "  block_count: -3",
        "  context_length: 0",
        "  embedding_length: 64",
        "  attention:",
        "    head_count: [1, 2]",
        "    head_count_kv: x",
        "    head_count: 8",
        "    sliding_window: 4",
        "    sliding_window_pattern: [true, false]",
        "name: [a]",
        "params: 1e9",
        "- x",
        "{",
        "  nextn_predict_layers: 5",
        "  ssm: {conv_kernel: 4}",
        "  attention: {key_length: 0}",
        "\t",
        "!!python/object x",
    ]
)


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
CONFIG_KEYS = st.sampled_from(
    [
        "architectures",
        "hidden_size",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "max_position_embeddings",
        "kv_lora_rank",
        "qk_rope_head_dim",
        "text_config",
        "sliding_window",
        "layer_types",
    ]
)


@settings(max_examples=300, deadline=2000)
@given(st.dictionaries(CONFIG_KEYS, JSON_VALUES | st.just(["LlamaForCausalLM"]) | st.integers(1, 64), max_size=10))
def test_configs_end_in_metadata_or_our_error(cfg: dict) -> None:
    json.dumps(cfg)
    with contextlib.suppress(KvplanError):
        config_to_metadata(cfg, "config.json")


DEPLOY_ATOMS = st.sampled_from(
    [
        "deployments:",
        "  - model: llama-3.1-8b",
        "  - name: a",
        "    ctx_per_seq: 32k",
        "    ctx_size: -1",
        "    parallel: [1]",
        "    ctx: 4k",
        "    max_model_len: 8k",
        "    n_gpu_layers: all",
        "    memory: 24",
        "    gpu: RTX-4090",
        "    memory: [24GiB, x]",
        "    budgets:",
        "      max_kv: 8GiB",
        "      headroom: 150%",
        "      min_ctx: 4k",
        "    engine: vllm",
        "    tp: 0",
        "- x",
        "deployments: 3",
        "    rs_seq: two",
        "{",
        "    params: eight",
        "    flash_attn: on",
        "    flash_attn: maybe",
        "    tensor_split: a,b",
        "    kv_unified: 3",
        "    gpu_memory_utilization: 2",
    ]
)


@settings(max_examples=300, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(DEPLOY_ATOMS, max_size=12))
def test_deployment_files_end_in_a_list_or_our_error(tmp_path_factory, lines: list[str]) -> None:
    from kvplan.check.deployments import load_deployments

    path = tmp_path_factory.mktemp("d") / "d.yaml"
    path.write_text("\n".join(lines))
    with contextlib.suppress(KvplanError):
        load_deployments(str(path))


ARGV_ATOMS = st.sampled_from(
    [
        "estimate",
        "fit",
        "compare",
        "curve",
        "check",
        "models",
        "gpus",
        "llama-3.1-8b",
        "gemma-3-27b",
        "-c",
        "32k",
        "--ctx-per-seq",
        "0",
        "-1",
        "-np",
        "300",
        "--gpu",
        "RTX4090",
        "H100-80GBx3",
        "",
        "--memory",
        "24",
        "1e400",
        "nan",
        "--engine",
        "VLLM",
        "--max-model-len",
        "-tp",
        "3",
        "-ts",
        "inf,1",
        "-ngl",
        "auto",
        "--params",
        "8",
        "-ctk",
        "q8",
        "-o",
        "json",
        "--units",
        "si",
        "--cache-types",
        "auto",
        "--max-total",
        "1GiB",
        "--min-ctx",
        "--headroom",
        "150%",
        "--weights",
        "fp4",
        "-fa",
        "maybe",
        "--kv-cache-dtype",
        "fp8",
        "--",
        "-h",
    ]
)


@settings(max_examples=300, deadline=5000, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ARGV_ATOMS, max_size=10))
def test_any_command_line_ends_in_a_documented_exit_code(argv: list[str]) -> None:
    """Whatever is typed: a result or one line on stderr with a documented exit code; never a bug (70)."""
    import io

    from kvplan.cli import run

    out, err = io.StringIO(), io.StringIO()
    code = run(argv, out, err)
    assert code in (0, 1, 2, 3, 4), (argv, err.getvalue())
    if code >= 2:
        assert err.getvalue().count("\n") == 1 and "Traceback" not in err.getvalue(), (argv, err.getvalue())
