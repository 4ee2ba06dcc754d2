"""Record how many parameters transformers' own model classes hold for configs kvplan counts
(tests/fixtures/param_counts.json): the oracle for kvplan/sources/param_count.py.

usage: TRANSFORMERS_PYTHON scripts/params/record_transformers_counts.py

Run it with a Python that has torch and transformers (any CPU build; the README of this folder says which
versions were used). Each config is built with ``AutoConfig.for_model`` and its model class with
``from_config`` on the meta device (no memory is allocated, nothing is downloaded): the causal-LM class, or the
image-text class for a config with a ``vision_config``. The count is every parameter once (tied weights once) and
the ``e_score_correction_bias`` buffers the checkpoints store; other buffers (rotary tables, MiniMax's decay
constants) are not in a checkpoint and are left out.

Cases: every catalog checkpoint's config (scripts/checkpoints.yaml), every published config under
tests/fixtures/checkpoints, and ``synth-FAMILY-N``: small configs drawn per family with a fixed seed that vary
what the counters branch on (biases, tied output, q/k norms, layer patterns, expert counts, Mamba widths).
transformers does not build the checkpoints' MTP layers (DeepSeek-V3, GLM-4.5, Qwen3-Next): the test counts
those configs without them.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

import torch
import transformers
import yaml
from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForImageTextToText

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "fixtures" / "param_counts.json"


def for_transformers(cfg: dict[str, Any]) -> dict[str, Any]:
    """A kvplan config as transformers names its class: MiniMax-M1's remote-code config is transformers'
    ``minimax`` with ``layer_types`` for ``attn_type_list``."""
    cfg = json.loads(json.dumps(cfg))
    if cfg.get("model_type") == "mistral3" and "tie_word_embeddings" not in cfg:
        # transformers 5's Mistral3Config ties the head by default at the top level, where 4.x (and the checkpoints,
        # which ship lm_head.weight) follow the text config: state it as the text config does
        cfg["tie_word_embeddings"] = cfg.get("text_config", {}).get("tie_word_embeddings", False)
    if cfg.get("model_type") in ("minimax_m1", "minimax_text_01"):
        cfg["model_type"] = "minimax"
        cfg["layer_types"] = ["full_attention" if t else "linear_attention" for t in cfg.pop("attn_type_list")]
    return cfg


def count(cfg: dict[str, Any]) -> int:
    cfg = for_transformers(cfg)
    model_type = cfg.pop("model_type")
    conf = AutoConfig.for_model(model_type, **cfg)
    with torch.device("meta"):
        if "vision_config" in cfg:
            model = AutoModelForImageTextToText.from_config(conf)
        else:
            model = AutoModelForCausalLM.from_config(conf)
    params = sum(p.numel() for p in model.parameters())
    kept = sum(b.numel() for name, b in model.named_buffers() if name.endswith("e_score_correction_bias"))
    return params + kept


def synth(rng: random.Random) -> dict[str, dict[str, Any]]:
    """Small configs per family, varying what each counter branches on."""
    out: dict[str, dict[str, Any]] = {}

    def pick(*xs: Any) -> Any:
        return rng.choice(xs)

    for i in range(6):
        d, heads = pick(64, 96, 128), pick(4, 8)
        kv = pick(1, 2, heads)
        base = {"hidden_size": d, "num_attention_heads": heads, "num_key_value_heads": kv, "vocab_size": pick(97, 256),
                "intermediate_size": pick(48, 160), "tie_word_embeddings": pick(True, False)}  # fmt: skip
        out[f"synth-cohere-{i}"] = {"model_type": "cohere", **base, "num_hidden_layers": pick(1, 3),
                                    "use_qk_norm": pick(True, False), "attention_bias": pick(True, False)}  # fmt: skip
        out[f"synth-falcon_mamba-{i}"] = {
            "model_type": "falcon_mamba", "hidden_size": d, "num_hidden_layers": pick(1, 3), "vocab_size": 101,
            "state_size": pick(8, 16), "expand": pick(2, 16), "intermediate_size": pick(2 * d, 3 * d),
            "conv_kernel": pick(2, 4), "time_step_rank": pick("auto", 12), "use_bias": pick(True, False),
            "use_conv_bias": pick(True, False), "tie_word_embeddings": pick(True, False)}  # fmt: skip
        out[f"synth-mamba2-{i}"] = {
            "model_type": "mamba2", "hidden_size": d, "num_hidden_layers": pick(1, 3), "vocab_size": 101,
            "num_heads": 2 * d // 16, "head_dim": 16, "expand": 2, "state_size": pick(8, 16),
            "n_groups": pick(1, 2), "conv_kernel": 4, "use_bias": pick(True, False),
            "use_conv_bias": pick(True, False), "tie_word_embeddings": pick(True, False)}  # fmt: skip
        out[f"synth-falcon_h1-{i}"] = {
            "model_type": "falcon_h1", **base, "num_hidden_layers": pick(1, 3), "head_dim": 16,
            "mamba_d_ssm": pick(None, 2 * d), "mamba_expand": 2, "mamba_n_heads": 2 * d // 16, "mamba_d_head": 16,
            "mamba_d_state": pick(8, 16), "mamba_n_groups": pick(1, 2), "mamba_d_conv": 4,
            "mamba_conv_bias": pick(True, False), "mamba_proj_bias": pick(True, False),
            "mamba_rms_norm": pick(True, False), "attention_bias": pick(True, False),
            "mlp_bias": pick(True, False)}  # fmt: skip
        n = pick(2, 4)
        types = [pick("mamba", "attention") for _ in range(n)]
        out[f"synth-granitemoehybrid-{i}"] = {
            "model_type": "granitemoehybrid", **base, "num_hidden_layers": n, "layer_types": types,
            "shared_intermediate_size": pick(32, 64), "num_local_experts": pick(0, 4), "num_experts_per_tok": 2,
            "mamba_n_heads": 2 * d // 16, "mamba_d_head": 16, "mamba_d_state": pick(8, 16),
            "mamba_n_groups": pick(1, 2), "mamba_expand": 2, "mamba_conv_bias": pick(True, False),
            "mamba_proj_bias": pick(True, False), "attention_bias": pick(True, False)}  # fmt: skip
        out[f"synth-jamba-{i}"] = {
            "model_type": "jamba", **base, "num_hidden_layers": pick(4, 8), "num_experts": pick(2, 4),
            "num_experts_per_tok": 1, "attn_layer_period": pick(2, 4), "attn_layer_offset": pick(0, 1),
            "expert_layer_period": 2, "expert_layer_offset": pick(0, 1), "mamba_d_state": 8, "mamba_expand": 2,
            "mamba_dt_rank": pick("auto", 8), "mamba_conv_bias": pick(True, False),
            "mamba_proj_bias": pick(True, False)}  # fmt: skip
        out[f"synth-minimax_m2-{i}"] = {
            "model_type": "minimax_m2", **base, "num_hidden_layers": pick(1, 3), "head_dim": 16,
            "num_local_experts": pick(2, 4), "num_experts_per_tok": 1, "use_qk_norm": True,
            "use_routing_bias": pick(True, False)}  # fmt: skip
        out[f"synth-minimax_m1-{i}"] = {
            "model_type": "minimax_m1", **base, "num_hidden_layers": 3, "head_dim": 16,
            "attn_type_list": [pick(0, 1) for _ in range(3)], "num_local_experts": pick(2, 4),
            "num_experts_per_tok": 1}  # fmt: skip
        n4 = pick(2, 4)
        text4 = {**base, "num_hidden_layers": n4, "head_dim": 16, "intermediate_size_mlp": pick(64, 96),
                 "num_local_experts": pick(2, 4), "interleave_moe_layer_step": pick(1, 2),
                 "use_qk_norm": pick(True, False), "attention_bias": pick(True, False)}  # fmt: skip
        out[f"synth-llama4_text-{i}"] = {"model_type": "llama4_text", **text4}
        out[f"synth-llama4-{i}"] = {
            "model_type": "llama4", "text_config": text4,
            "vision_config": {"hidden_size": 32, "intermediate_size": 128, "num_hidden_layers": pick(1, 2),
                              "num_attention_heads": 4, "image_size": pick(28, 56), "patch_size": 14,
                              "pixel_shuffle_ratio": 0.5, "projector_input_dim": pick(40, 64),
                              "projector_output_dim": pick(40, 64), "vision_output_dim": pick(40, 64)}}  # fmt: skip
        out[f"synth-mistral3-{i}"] = {
            "model_type": "mistral3", "spatial_merge_size": pick(1, 2), "multimodal_projector_bias": pick(True, False),
            "tie_word_embeddings": base["tie_word_embeddings"],
            "text_config": {"model_type": "mistral", **base, "num_hidden_layers": pick(1, 2), "head_dim": 16},
            "vision_config": {"model_type": "pixtral", "hidden_size": 32, "intermediate_size": 48,
                              "num_hidden_layers": pick(1, 2), "num_attention_heads": 4, "head_dim": 8,
                              "image_size": 56, "patch_size": 14}}  # fmt: skip
    return out


def main() -> None:
    checkpoints = yaml.safe_load((ROOT / "scripts" / "checkpoints.yaml").read_text())
    configs: dict[str, dict[str, Any]] = {}
    for name, entry in sorted(checkpoints.items()):
        if "config" in entry:
            configs[f"catalog-{name}"] = entry["config"]
    for path in sorted((ROOT / "tests" / "fixtures" / "checkpoints").glob("*/config.json")):
        configs[f"published-{path.parent.name}"] = json.loads(path.read_text())
    configs.update(synth(random.Random(20261204)))
    cases: dict[str, dict[str, Any]] = {}
    for name, cfg in configs.items():
        try:
            cases[name] = {"config": cfg, "params": count(cfg)}
        except Exception as exc:  # a config transformers refuses is recorded as such
            cases[name] = {"config": cfg, "error": f"{type(exc).__name__}: {exc}"[:300]}
        print(name, cases[name].get("params", cases[name].get("error")), file=sys.stderr)
    OUT.write_text(json.dumps({"transformers": transformers.__version__, "torch": torch.__version__,
                               "cases": cases}, indent=1, sort_keys=True) + "\n")  # fmt: skip
    print(f"wrote {len(cases)} cases to {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
