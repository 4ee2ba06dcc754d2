"""The weights a runtime loads, from what the checkpoint says (kvplan.capacity.weights, capacity.engines)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import FIXTURES, kv

from kvplan.capacity.engines import engine_weights
from kvplan.capacity.weights import checkpoint_weights, model_weights
from kvplan.errors import BadInputError, RefusedConfigError
from kvplan.model import WeightFormat
from kvplan.sources.catalog import load_catalog_model
from kvplan.sources.hf_config import load_hf_config
from kvplan.sources.param_count import count_params

GPT_OSS = FIXTURES / "checkpoints" / "gpt-oss-20b"


def test_mxfp4_bytes_equal_the_published_safetensors_index() -> None:
    """openai/gpt-oss-20b's model.safetensors.index.json states total_size 13,761,264,768 (SOURCES.md): the MXFP4
    experts (16 bytes of e2m1 + 1 scale byte per 32) plus every other tensor in bf16, exactly."""
    m = load_hf_config(str(GPT_OSS))
    total, basis = engine_weights(m, None, None)
    assert total == 13_761_264_768 and basis.startswith("exact: the checkpoint's mxfp4 routed experts")
    assert load_catalog_model("gpt-oss-20b").weight_format == WeightFormat(
        "mxfp4",
        load_catalog_model("gpt-oss-20b").weight_format.source,
        "bf16",
        4,
        32,  # type: ignore[union-attr]
    )
    assert engine_weights(load_catalog_model("gpt-oss-20b"), None, None)[0] == 13_761_264_768


def test_gpt_oss_fits_a_24_gb_card_in_vllm() -> None:
    """The issue's case: the bf16 assumption made the MXFP4 checkpoint "not fit" (39.12 GiB)."""
    r = kv("fit", "gpt-oss-20b", "--engine", "vllm", "--gpu", "RTX-4090", "--max-model-len", "32k", "-o", "json")
    doc = r.json()
    assert r.exit_code == 0 and doc["fits"] is True
    assert doc["devices"][0]["weight_bytes"] == 13_761_264_768


def test_deepseek_v3_fp8_fits_eight_h200() -> None:
    r = kv("fit", "deepseek-v3", "--engine", "vllm", "--gpu", "H200x8", "-tp", "8")
    assert r.exit_code == 0, r.output
    assert "estimate: the checkpoint's fp8 linear weights" in r.stdout


def test_fp32_checkpoints_load_in_16_bits() -> None:
    """OLMo-2 ships float32; vLLM's dtype auto downcasts it (_resolve_auto_dtype): 2 bytes per parameter."""
    m = load_catalog_model("olmo-2-7b")
    assert m.weight_format is not None and m.weight_format.kind == "fp32"
    total, basis = engine_weights(m, None, None)
    assert total == 7_298_617_344 * 2 and "(bf16;" in basis


def _config(tmp_path: Path, quant: dict[str, object] | None, **extra: object) -> Path:
    cfg = json.loads((GPT_OSS.parent.parent / "engines" / "configs" / "llama-3.1-8b" / "config.json").read_text())
    cfg.pop("torch_dtype", None)
    cfg.update(extra)
    if quant is not None:
        cfg["quantization_config"] = quant
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(cfg))
    return folder


def test_awq_is_sized_by_its_tensors(tmp_path: Path) -> None:
    """AWQ GEMM: qweight (4 bits) + qzeros (4 bits per group of 128 outputs) + fp16 scales per group; the embedding
    and head stay fp16. Llama-3.1-8B: 6.98 B linear parameters in 4.16 bits + 1.05 B at 2 B."""
    m = load_hf_config(
        str(_config(tmp_path, {"quant_method": "awq", "bits": 4, "group_size": 128}, torch_dtype="float16"))
    )
    total, basis = engine_weights(m, None, None)
    count = count_params({**json.loads((tmp_path / "ckpt" / "config.json").read_text()), "model_type": "llama"})
    assert count is not None
    linear = sum(x.params for x in count.linears if x.quantized)
    assert total == linear // 2 + linear // 128 // 2 + linear // 128 * 2 + (count.total - linear) * 2
    assert basis.startswith("estimate: the checkpoint's awq linear weights (6.98 B parameters at 4.16 bits)")


def test_an_unknown_quantization_asks_for_the_bytes(tmp_path: Path) -> None:
    m = load_hf_config(str(_config(tmp_path, {"quant_method": "hqq"})))
    with pytest.raises(
        BadInputError, match=r"unknown \(hqq\), a quantization kvplan does not size; pass --weight-bytes"
    ):
        engine_weights(m, None, None)
    r = kv("fit", str(tmp_path / "ckpt"), "--engine", "vllm", "--gpu", "H100-80GB")
    assert r.exit_code != 0 and "--weight-bytes" in r.stderr and "Traceback" not in r.stderr
    assert (
        kv("fit", str(tmp_path / "ckpt"), "--engine", "vllm", "--gpu", "H100-80GB", "--weight-bytes", "5GiB").exit_code
        == 0
    )


def test_a_config_without_a_dtype_is_an_estimate(tmp_path: Path) -> None:
    m = load_hf_config(str(_config(tmp_path, None)))
    total, basis = engine_weights(m, None, None)
    assert total == 8_030_261_248 * 2 and basis.startswith("estimate:") and "bf16 assumed" in basis


def test_weights_type_applies_to_the_linear_weights() -> None:
    """--weights fp8 on a bf16 checkpoint: its linear weights in fp8 with 128×128 block scales, the embedding and
    head in bf16 (was: every parameter at 8 bits)."""
    m = load_catalog_model("llama-3.1-8b")
    total, basis = engine_weights(m, "fp8", None)
    count = m.param_count
    assert count is not None
    head = 128256 * 4096
    assert total > count.total - 2 * head + 2 * 2 * head and "fp8 linear weights" in basis


def test_llama_cpp_keeps_gpt_oss_experts_in_mxfp4() -> None:
    """Every published gpt-oss GGUF keeps its expert tensors MXFP4 whatever its label; the rest at q8_0 by default."""
    m = load_catalog_model("gpt-oss-120b")
    w = model_weights(m, None, None)
    count = m.param_count
    assert count is not None and count.expert_params == 114_661_785_600
    rest = count.total - count.expert_params
    assert w.total_bytes == count.expert_params * 17 // 32 + rest * 34 // 32
    q4 = model_weights(m, "q4_0", None)
    assert q4.total_bytes == count.expert_params * 17 // 32 + rest * 18 // 32
    assert "MXFP4" in w.basis and not w.exact


def test_checkpoint_weights_by_hand() -> None:
    """One 256 × 256 linear of an fp8 checkpoint with 128 × 128 blocks: 65,536 bytes + 4 float32 scales."""
    from kvplan.model import Linear, ParamCount

    count = ParamCount(65_536 + 10, 10, 0, (Linear("model.layers.*.mlp.up_proj", 256, 256, 1),), "by hand")
    fmt = WeightFormat("fp8", "here", "bf16", 8, block=(128, 128))
    assert checkpoint_weights(count, fmt)[0] == 65_536 + 16 + 10 * 2
    kept = WeightFormat("fp8", "here", "bf16", 8, block=(128, 128), keep=("model.layers.*.mlp",))
    assert checkpoint_weights(count, kept)[0] == (65_536 + 10) * 2


def _recorded_quant() -> list[dict[str, object]]:
    import json as _json

    data = _json.loads((FIXTURES / "engines" / "vllm_quant.json").read_text())
    assert data["vllm"] == "0.33.0"
    # not read here: vLLM 0.33 has no "bitsandbytes" method, and a ModelOpt NVFP4 block taken by its quant_method
    # alone (vLLM's config code resolves it to "modelopt_fp4": the "modelopt-nvfp4-resolved" cases)
    return [c for c in data["cases"] if not str(c["format"]).startswith("bnb") and c["format"] != "modelopt-nvfp4"]


QUANT = _recorded_quant()


@pytest.mark.parametrize("case", QUANT, ids=[str(c["id"]) for c in QUANT])
def test_quantized_linear_bytes_are_what_vllm_allocates(case: dict[str, object]) -> None:
    """Each format's config block read as kvplan reads a config.json, one linear of out × in sized — against the
    tensors vLLM 0.33.0's own quant method creates for it (scripts/engines/record_vllm_quant.py), or its refusal."""
    from kvplan.capacity.weights import _linear_bytes
    from kvplan.model import Linear, ParamCount
    from kvplan.sources.weight_format import read_weight_format

    fmt = read_weight_format({"quantization_config": case["quantization_config"], "torch_dtype": "bfloat16"}, "c")
    out_f, in_f = int(case["out"]), int(case["in"])  # type: ignore[call-overload]
    if "error" in case:
        count = ParamCount(out_f * in_f, 0, 0, (Linear("model.layers.*.mlp.up_proj", out_f, in_f, 1),), "one")
        with pytest.raises(RefusedConfigError):
            checkpoint_weights(count, fmt)
        return
    assert _linear_bytes(fmt, out_f, in_f) == case["bytes"]


def test_the_quant_recording_covers_each_format() -> None:
    formats = {c["format"] for c in QUANT if "error" not in c}
    assert formats >= {"awq-4-g128", "gptq-4-g128", "gptq-8-g128", "fp8-block-128", "fp8-tensor", "fbgemm-fp8",
                       "modelopt-fp8", "ct-w4a16-g128", "ct-fp8-channel", "modelopt-nvfp4-resolved"}  # fmt: skip
