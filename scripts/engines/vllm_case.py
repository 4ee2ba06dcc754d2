"""Run vLLM 0.33.0's own KV-cache planning for one case, on a machine without a GPU, and print the answer as JSON.

usage (inside a venv with vllm==0.33.0; see scripts/engines/README.md):
    python scripts/engines/vllm_case.py '{"model": DIR, "gpu": {...}, "kv_cache_memory_bytes": B, ...}'

One process per case: vLLM caches its attention-backend choice without the device in the key. The call sequence
is the one ../shared/oracle/vllm/README.md describes (the meta-device route), with the platform stub of
vllm_platform.py: vLLM builds its own config, instantiates the real model class on the meta device (every layer
registers in the forward context), picks its backends and block size, makes each layer's KVCacheSpec, and runs
the steps of EngineCore._initialize_kv_caches with the given KV budget (`kv_cache_memory_bytes`), so nothing here
re-derives a number. Never edit a recorded number by hand: change the case list in record_vllm.py and re-run.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from typing import Any

os.environ.setdefault("VLLM_USE_V2_MODEL_RUNNER", "1")  # the GPU-host default (V1 is only a fallback without Triton)
os.environ.setdefault("VLLM_DISABLE_SHARED_EXPERTS_STREAM", "1")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

_ARG = sys.argv[1]
#: the case: JSON, or @FILE holding it (a long workload does not fit on a command line)
CASE: dict[str, Any] = json.loads(open(_ARG[1:]).read() if _ARG.startswith("@") else _ARG)  # noqa: SIM115

import vllm_platform  # noqa: E402  (must come before anything else from vllm)

vllm_platform.configure(CASE["gpu"])

import torch  # noqa: E402
from vllm.config import set_current_vllm_config  # noqa: E402
from vllm.distributed import parallel_state  # noqa: E402
from vllm.distributed.kv_transfer.kv_connector.utils import get_current_attn_backends  # noqa: E402
from vllm.engine.arg_utils import EngineArgs  # noqa: E402
from vllm.model_executor.model_loader.utils import initialize_model  # noqa: E402
from vllm.platforms import current_platform  # noqa: E402
from vllm.usage.usage_lib import UsageContext  # noqa: E402
from vllm.utils.torch_utils import set_default_torch_dtype  # noqa: E402
from vllm.v1.attention.backends.utils import get_supported_kv_cache_layouts, resolve_kv_cache_layout  # noqa: E402
from vllm.v1.core.kv_cache_config_builder import get_kv_cache_config_builder  # noqa: E402
from vllm.v1.core.kv_cache_planning import (  # noqa: E402
    _pool_bytes_per_block_from_builder,
    _project_kv_cache_groups_to_worker,
    get_global_kv_cache_groups,
    get_kv_cache_configs,
)
from vllm.v1.core.kv_cache_utils import generate_scheduler_kv_cache_config, get_kv_cache_capacity  # noqa: E402
from vllm.v1.core.single_type_kv_cache_manager import register_all_kvcache_specs  # noqa: E402
from vllm.v1.kv_cache_interface import MambaSpec, UniformTypeKVCacheSpecs, iter_layer_specs  # noqa: E402
from vllm.v1.worker.gpu.attn_utils import get_kv_cache_spec  # noqa: E402
from vllm.v1.worker.workspace import init_workspace_manager  # noqa: E402

#: EngineArgs fields a case may set (names as vLLM spells them)
ENGINE_ARGS = (
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "kv_cache_dtype",
    "max_model_len",
    "block_size",
    "max_num_seqs",
    "max_num_batched_tokens",
    "enable_prefix_caching",
    "mamba_ssm_cache_dtype",
    "mamba_cache_mode",
    "disable_hybrid_kv_cache_manager",
    "kv_cache_memory_bytes",
    "async_scheduling",
)


def _spec_json(spec: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": type(spec).__name__,
        "block_size": spec.block_size,
        "page_bytes": spec.page_size_bytes,
    }
    if isinstance(spec, MambaSpec):
        out.update(
            shapes=[list(s) for s in spec.shapes],
            dtypes=[str(d).removeprefix("torch.") for d in spec.dtypes],
            mamba_type=str(getattr(spec.mamba_type, "name", spec.mamba_type)),
            page_size_padded=spec.page_size_padded,
        )
    else:
        for key in ("num_kv_heads", "head_size", "head_size_v", "sliding_window", "attention_chunk_size",
                    "page_size_padded", "state_content_bytes"):  # fmt: skip
            value = getattr(spec, key, None)
            if value is not None:
                out[key] = value
        if hasattr(spec, "dtype"):
            out["dtype"] = str(spec.dtype).removeprefix("torch.")
    return out


def _group_json(group: Any) -> dict[str, Any]:
    specs = list(iter_layer_specs(group.kv_cache_spec))
    first = specs[0] if isinstance(group.kv_cache_spec, UniformTypeKVCacheSpecs) else group.kv_cache_spec
    return {"layers": len(group.layer_names), "spec": _spec_json(first),
            "layer_pages": sorted({s.page_size_bytes for s in specs})}  # fmt: skip


def run() -> dict[str, Any]:
    return build()[2]


def build() -> tuple[Any, Any, dict[str, Any]]:
    """vLLM's own config, the scheduler's KV cache config (generate_scheduler_kv_cache_config) and the answer."""
    args = {k: CASE[k] for k in ENGINE_ARGS if k in CASE}
    tp = args.get("tensor_parallel_size", 1)
    pp = args.get("pipeline_parallel_size", 1)
    budget = CASE["kv_cache_memory_bytes"]
    vc = EngineArgs(model=CASE["model"], skip_tokenizer_init=True, **args).create_engine_config(
        UsageContext.OPENAI_API_SERVER
    )
    out: dict[str, Any] = {
        "resolved": {
            "max_model_len": vc.model_config.max_model_len,
            "max_num_batched_tokens": vc.scheduler_config.max_num_batched_tokens,
            "max_num_seqs": vc.scheduler_config.max_num_seqs,
            "max_concurrent_batches": vc.max_concurrent_batches,
            "enable_prefix_caching": vc.cache_config.enable_prefix_caching,
            "mamba_cache_mode": vc.cache_config.mamba_cache_mode,
            "mamba_ssm_cache_dtype": vc.cache_config.mamba_ssm_cache_dtype,
            "cache_dtype": vc.cache_config.cache_dtype,
            "model_dtype": str(vc.model_config.dtype).removeprefix("torch."),
        }
    }
    with set_current_vllm_config(vc):
        parallel_state.init_distributed_environment(
            world_size=1, rank=0, local_rank=0, distributed_init_method="tcp://127.0.0.1:0", backend="gloo"
        )
        parallel_state.initialize_model_parallel(1, 1, backend="gloo")
        init_workspace_manager(torch.device("meta"))  # GPUModelRunner.__init__ does (FlashMLA-sparse asks for it)
        if tp > 1:  # the layers split their heads by the TP group's size; nothing communicates while they are built
            parallel_state.get_tp_group().world_size = tp
        stages: list[dict[str, Any]] = []
        backends: dict[str, Any] = {}
        for rank in range(pp):  # each stage builds only its own layers, as its worker would
            if pp > 1:
                group = parallel_state.get_pp_group()
                group.world_size, group.rank_in_group, group.ranks, group.rank = pp, rank, list(range(pp)), rank
            vc.compilation_config.static_forward_context.clear()
            with set_default_torch_dtype(vc.model_config.dtype), torch.device("meta"):
                initialize_model(vllm_config=vc)
            if rank == 0:
                current_platform.update_block_size_for_backend(vc)
                out["resolved"]["block_size_after_backend"] = vc.cache_config.block_size
                out["resolved"]["mamba_block_size"] = vc.cache_config.mamba_block_size
            stages.append(get_kv_cache_spec(vc))
            register_all_kvcache_specs(vc)
            backends.update({b.get_name(): b for b in get_current_attn_backends(vc)})
        out["backends"] = sorted(backends)
        out["stage_layers"] = [len(stage) for stage in stages]
        workers = [stage for stage in stages for _ in range(tp)]
        layouts = [layout.name for layout in get_supported_kv_cache_layouts(list(backends.values()))]
        layout = resolve_kv_cache_layout(vc, [layouts] * len(workers), [s for w in workers for s in w.values()])
        out["layout"] = layout.name
        groups = get_global_kv_cache_groups(vc, workers)
        builder = get_kv_cache_config_builder(vc)
        out["bytes_per_block"] = [
            _pool_bytes_per_block_from_builder(builder, vc, _project_kv_cache_groups_to_worker(groups, stage))
            for stage in stages
        ]
        configs = get_kv_cache_configs(vc, workers, [budget] * len(workers), groups)
        sched = generate_scheduler_kv_cache_config(configs)
        participating = [g.kv_cache_spec.block_size for g in sched.kv_cache_groups if g.kv_cache_spec.prefix_cacheable]
        tokens, concurrency = get_kv_cache_capacity(vc, sched)
        out.update(
            groups=[_group_json(g) for g in configs[0].kv_cache_groups],
            num_blocks=sched.num_blocks,
            stage_blocks=[budget // b for b in out["bytes_per_block"]],
            block_size=min(participating or [g.kv_cache_spec.block_size for g in sched.kv_cache_groups]),
            max_model_len=vc.model_config.max_model_len,
            kv_cache_tokens=tokens,
            concurrency=concurrency,
        )
    return vc, sched, out


if __name__ == "__main__":
    try:
        result = {"ok": run()}
    except Exception as exc:  # a refusal is an answer too: record vLLM's own message
        result = {"error": {"type": type(exc).__name__, "message": str(exc).strip().splitlines()[0][:400]}}
        if os.environ.get("VLLM_CASE_DEBUG"):
            traceback.print_exc()
    print("VLLM_CASE_RESULT " + json.dumps(result))
