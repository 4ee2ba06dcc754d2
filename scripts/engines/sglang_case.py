"""Run SGLang 0.5.23's own KV-pool sizing for one case, on a machine without a GPU, and print the answer as JSON.

usage (inside a venv with sglang==0.5.23; see scripts/engines/README.md):
    python scripts/engines/sglang_case.py '{"model": DIR, "gpu": {...}, "available_bytes": A, "pre_bytes": P, ...}'

The call sequence of ../shared/oracle/sglang/README.md — what ModelRunner does up to, not including, allocating
the pools: ServerArgs and the runtime context's resolution pipeline (mem_fraction_static, page size, attention
backend, mamba strategy), ModelConfig, the KV cache dtype, the layer indices, the model class's own sliding
window, then KVCacheConfigurator._resolve_memory_pool_config and _derive_pool_sizes. The free memory SGLang
measures is given: ``available_bytes`` after the weights are loaded, ``pre_bytes`` before (SGLang keeps
pre × (1 − mem_fraction_static) of it back for activations and graphs).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import traceback
import types
from typing import Any

CASE: dict[str, Any] = json.loads(sys.argv[1])
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# isort: off
import transformers.models.auto.processing_auto  # noqa: E402, F401  (before the stubs: it probes torchvision)
import tvm_ffi  # noqa: E402, F401  (before the stubs: it probes cuda.*)
import sglang_platform  # noqa: E402  (before anything from sglang)
# isort: on

if "torchvision" not in sglang_platform.STUB_PREFIXES:  # SGLang's VLM configs import it; not installed here
    sglang_platform.STUB_PREFIXES += ("torchvision",)
sglang_platform.configure(CASE["gpu"])
if os.path.basename(sys.argv[0]) != "sglang_sched_case.py":  # the sizing and log recorders (the scheduler's
    sglang_platform.cuda_build()  # recorder imports this module too, and stays a CPU build)
# SGLang also reads the GPU's total memory from nvidia-smi: a stand-in first on PATH prints the MiB
_bin = tempfile.mkdtemp()
with open(os.path.join(_bin, "nvidia-smi"), "w") as f:
    f.write(f"#!/bin/sh\necho {CASE['gpu']['mem'] // 2**20}\n")
os.chmod(os.path.join(_bin, "nvidia-smi"), 0o755)
os.environ["PATH"] = _bin + os.pathsep + os.environ["PATH"]

import sglang.srt.mem_cache.kv_cache_configurator as kcc  # noqa: E402
from sglang.srt import runtime_context  # noqa: E402
from sglang.srt.configs.model_config import AttentionArch, ModelConfig  # noqa: E402
from sglang.srt.mem_cache import kv_cache_dtype as kvd  # noqa: E402
from sglang.srt.model_executor.model_runner_components import layer_setup  # noqa: E402
from sglang.srt.model_executor.model_runner_components.load_model_utils import (  # noqa: E402
    resolve_sliding_window_size,
)
from sglang.srt.model_executor.model_runner_components.spec_aux_hidden_state import (  # noqa: E402
    SpecAuxHiddenStateConfig,
)
from sglang.srt.models.registry import ModelRegistry  # noqa: E402
from sglang.srt.runtime_context import get_model, get_parallel, get_schedule  # noqa: E402
from sglang.srt.server_args import ServerArgs  # noqa: E402
from sglang.srt.speculative.spec_info import SpeculativeAlgorithm  # noqa: E402

SERVER_ARGS = ("tp_size", "kv_cache_dtype", "page_size", "mem_fraction_static", "context_length",
               "max_running_requests", "disable_radix_cache", "max_total_tokens", "swa_full_tokens_ratio",
               "max_mamba_cache_size", "chunked_prefill_size", "max_prefill_tokens",
               "disable_overlap_schedule")  # fmt: skip


def _stand_in_model(mc: ModelConfig) -> Any:
    """What the configurator reads of the model: the layer range, and the model class's own window method."""
    model = types.SimpleNamespace(start_layer=0, end_layer=mc.num_hidden_layers, config=mc.hf_config)
    try:
        cls, _ = ModelRegistry.resolve_model_cls(mc.hf_config.architectures)
    except Exception:
        cls = None
    method = getattr(cls, "get_attention_sliding_window_size", None)
    if method is not None:
        model.get_attention_sliding_window_size = types.MethodType(method, model)
    # a multimodal class asks its language model: stand in for that too, with the text config and the text class
    text_arch = mc.hf_config.architectures[0].replace("ForConditionalGeneration", "ForCausalLM")
    try:
        text_cls, _ = ModelRegistry.resolve_model_cls([text_arch])
    except Exception:
        text_cls = None
    text_method = getattr(text_cls, "get_attention_sliding_window_size", None)
    if text_method is not None and text_cls is not cls:
        model.language_model = types.SimpleNamespace(config=mc.hf_text_config)
        model.language_model.get_attention_sliding_window_size = types.MethodType(text_method, model.language_model)
    out_cls = cls.__name__ if cls is not None else None
    return model, out_cls


def configurator() -> tuple[Any, Any, Any, Any, Any]:
    """ServerArgs resolved as the scheduler resolves them, the ModelConfig, the KVCacheConfigurator a ModelRunner
    would make, the model class's name and its sliding window."""
    args = {k: CASE[k] for k in SERVER_ARGS if k in CASE}
    sa = ServerArgs(model_path=CASE["model"], skip_tokenizer_init=True, device="cuda", **args)
    runtime_context.publish(sa, role="scheduler")
    get_parallel().override_permanently(world_group=types.SimpleNamespace(cpu_group=None))
    mc = ModelConfig.from_server_args(sa)
    kv_str, kv_dtype = kvd.configure_kv_cache_dtype(
        server_args_kv_cache_dtype=get_model().kv_cache_dtype, model=None, model_dtype=mc.dtype,
        is_draft_worker=False, is_dflash=False, speculative_draft_attention_backend="",
    )  # fmt: skip
    model, model_cls = _stand_in_model(mc)
    info = layer_setup.resolve_layer_indices(model=model, model_config=mc, is_draft_worker=False)
    window = resolve_sliding_window_size(model, mc)
    kvc = kcc.KVCacheConfigurator(
        device="cuda", gpu_id=0, attn_dp_size=1, pp_size=1, pp_group=None, model=model, model_config=mc,
        server_args=sa, kv_cache_dtype=kv_dtype, kv_cache_dtype_str=kv_str, model_dtype=mc.dtype,
        page_size=get_schedule().page_size, sliding_window_size=window,
        spec_algorithm=SpeculativeAlgorithm.from_string(None), is_draft_worker=False, post_capture_kv_active=False,
        spec_aux_config=SpecAuxHiddenStateConfig(), is_hybrid_swa=mc.is_hybrid_swa,
        is_hybrid_swa_compress=mc.is_hybrid_swa_compress, use_mla_backend=mc.attention_arch == AttentionArch.MLA,
        layer_info=info, forward_stream=None, req_to_token_pool=None, token_to_kv_pool_allocator=None,
        memory_pool_config=None,
    )  # fmt: skip
    kcc.get_available_gpu_memory = lambda *a, **k: CASE["available_bytes"] / (1 << 30)
    return sa, mc, kvc, model_cls, window


def run() -> dict[str, Any]:
    _, mc, kvc, model_cls, window = configurator()
    config = kvc._resolve_memory_pool_config(CASE["pre_bytes"] / (1 << 30))
    sizes = kvc._derive_pool_sizes(config=config)
    return answer(mc, kvc, model_cls, window, sizes)


def answer(mc: Any, kvc: Any, model_cls: Any, window: Any, sizes: Any) -> dict[str, Any]:
    """What SGLang decided, as the fixtures keep it."""
    tp = CASE.get("tp_size", 1)
    sched = get_schedule()
    mamba = kvc.mambaish_config
    return {
        "model_class": model_cls,
        "tp": tp,
        "mem_fraction_static": sched.mem_fraction_static,
        "page_size": sched.page_size,
        "context_len": mc.context_len,
        "kv_cache_dtype": str(kvc.kv_cache_dtype).removeprefix("torch."),
        "is_hybrid_swa": bool(mc.is_hybrid_swa),
        "sliding_window_size": window,
        "use_mla": mc.attention_arch == AttentionArch.MLA,
        "max_total_num_tokens": sizes.max_total_num_tokens,
        "max_running_requests": sizes.max_running_requests,
        "full_max_total_num_tokens": sizes.full_max_total_num_tokens,
        "swa_max_total_num_tokens": sizes.swa_max_total_num_tokens,
        "max_mamba_cache_size": getattr(sched, "max_mamba_cache_size", None) if mamba is not None else None,
        "mamba_cache_per_req": mamba.mamba2_cache_params.mamba_cache_per_req if mamba is not None else None,
    }


if __name__ == "__main__":
    try:
        result = {"ok": run()}
    except Exception as exc:
        result = {"error": {"type": type(exc).__name__, "message": str(exc).strip().splitlines()[0][:400]}}
        if os.environ.get("SGLANG_CASE_DEBUG"):
            traceback.print_exc()
    print("SGLANG_CASE_RESULT " + json.dumps(result))
