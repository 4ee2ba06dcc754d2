"""Drive vLLM 0.33.0's own v1 scheduler and KV cache manager through a workload, on a machine without a GPU, and
print what happens at every schedule() as JSON.

usage (inside a venv with vllm==0.33.0): python scripts/engines/vllm_sched_case.py CASE_JSON

CASE_JSON is a vllm_case.py case (model, gpu, engine arguments, kv_cache_memory_bytes) plus ``requests``: a list
of ``[arrive, prompt_tokens, output_tokens, cancel]`` — the engine-loop iteration at which the request is added,
its prompt and output lengths, and the iteration at which it is aborted (null: never). vLLM builds its config, KV
cache config and scheduler exactly as EngineCore does (../shared/oracle/vllm/README.md, "The scheduler over
time"); the model is an executor that answers at once: a scheduled request samples one token when its prefill is
complete (read right after schedule()), nothing for a partial prefill chunk; SamplingParams(max_tokens=N,
ignore_eos=True) ends it after N tokens. The engine loop is EngineCore's: step() when max_concurrent_batches is 1,
else step_with_batch_queue(), with its control flow copied and its futures already resolved. Prompt tokens are
distinct per request (no prefix-cache hits between requests) unless ``shared_prefix`` gives a common prefix length.

Recorded per schedule(): the iteration, tokens scheduled per request, running / waiting counts, the requests
preempted, and the free blocks of the block pool (block 0 is the null block).
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from collections import deque
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vllm_case

CASE = vllm_case.CASE
LOOP_SECONDS: list[float] = []  # the engine loop's wall time (benchmarks/bench_simulate.py reads it)

from vllm import SamplingParams  # noqa: E402
from vllm.config import set_current_vllm_config  # noqa: E402
from vllm.utils.hashing import get_hash_fn_by_name  # noqa: E402
from vllm.v1.core.kv_cache_utils import (  # noqa: E402
    get_request_block_hasher,
    init_none_hash,
    resolve_cache_hit_alignment_tokens,
    resolve_kv_cache_block_sizes,
    update_kv_cache_capacity,
)
from vllm.v1.outputs import ModelRunnerOutput  # noqa: E402
from vllm.v1.request import Request, RequestStatus  # noqa: E402
from vllm.v1.structured_output import StructuredOutputManager  # noqa: E402


def _prompt(index: int, length: int, shared: int) -> list[int]:
    """Distinct token ids per request after a common prefix of ``shared`` tokens."""
    return [7 + i % 1000 for i in range(min(shared, length))] + [
        1000 + (index * 7919 + i) % 30000 for i in range(max(0, length - shared))
    ]


def run() -> dict[str, Any]:  # noqa: C901 - EngineCore's loop, in one place
    vc, kv_config, planned = vllm_case.build()
    with set_current_vllm_config(vc):
        # the rest of EngineCore._initialize_kv_caches after generate_scheduler_kv_cache_config
        vc.cache_config.num_gpu_blocks = kv_config.num_blocks
        groups = kv_config.kv_cache_groups
        if groups:
            participating = [g.kv_cache_spec.block_size for g in groups if g.kv_cache_spec.prefix_cacheable]
            vc.cache_config.block_size = min(participating or [g.kv_cache_spec.block_size for g in groups])
            update_kv_cache_capacity(vc, kv_config)
        vc.validate_block_size()
        block_size, hash_block_size = resolve_kv_cache_block_sizes(kv_config, vc)
        kv_config.hash_block_size = hash_block_size
        kv_config.cache_hit_alignment_tokens = resolve_cache_hit_alignment_tokens(
            kv_config, vc, block_size, hash_block_size
        )
        sched_cls = vc.scheduler_config.get_scheduler_cls()
        scheduler = sched_cls(
            vllm_config=vc,
            kv_cache_config=kv_config,
            structured_output_manager=StructuredOutputManager(vc),
            include_finished_set=False,
            log_stats=False,
            block_size=block_size,
            hash_block_size=hash_block_size,
        )
        hasher = None
        if vc.cache_config.enable_prefix_caching:
            hash_fn = get_hash_fn_by_name(vc.cache_config.prefix_caching_hash_algo)
            init_none_hash(hash_fn)
            hasher = get_request_block_hasher(hash_block_size, hash_fn, vc.num_hash_lookahead_tokens)
        pool = scheduler.kv_cache_manager.block_pool
        steps: list[dict[str, Any]] = []
        outputs: dict[int, ModelRunnerOutput] = {}
        iteration = 0
        original_schedule = scheduler.schedule

        def schedule(*args: Any, **kwargs: Any) -> Any:
            so = original_schedule(*args, **kwargs)
            ids = list(so.num_scheduled_tokens)
            sampled = [[] if scheduler.requests[r].is_prefill_chunk else [1] for r in ids]
            outputs[id(so)] = ModelRunnerOutput(
                req_ids=ids, req_id_to_index={r: i for i, r in enumerate(ids)}, sampled_token_ids=sampled
            )
            steps.append(
                {
                    "iter": iteration,
                    "scheduled": [[int(r), n] for r, n in so.num_scheduled_tokens.items()],
                    "running": len(scheduler.running),
                    "waiting": len(scheduler.waiting) + len(scheduler.kv_holding_waiting),
                    "preempted": sorted(int(r) for r in so.preempted_req_ids or ()),
                    "free": pool.get_num_free_blocks(),
                }
            )
            return so

        scheduler.schedule = schedule  # type: ignore[method-assign]
        queue_size = vc.max_concurrent_batches
        batch_queue: deque[tuple[ModelRunnerOutput, Any]] = deque()

        def step() -> None:
            if not scheduler.has_requests():
                return
            so = scheduler.schedule()
            scheduler.update_from_output(so, outputs.pop(id(so)))

        def step_with_batch_queue() -> None:
            if scheduler.has_requests():
                so = scheduler.schedule()
                executed = so.total_num_scheduled_tokens > 0
                batch_queue.appendleft((outputs.pop(id(so)), so))
                if len(batch_queue) < queue_size and (executed or scheduler.has_requests()):
                    return
            elif not batch_queue:
                return
            out, so = batch_queue.pop()
            scheduler.update_from_output(so, out)

        step_fn = step if queue_size == 1 else step_with_batch_queue
        requests = [(i, *r) for i, r in enumerate(CASE["requests"])]
        shared = CASE.get("shared_prefix", 0)
        finished_at: dict[int, int] = {}
        limit = CASE.get("max_iters", 20000)
        baseline = pool.get_num_free_blocks()
        started = time.perf_counter()
        by_arrival: dict[int, list[int]] = {}
        by_cancel: dict[int, list[str]] = {}
        for index, arrive, _, _, cancel in requests:
            by_arrival.setdefault(arrive, []).append(index)
            if cancel is not None:
                by_cancel.setdefault(cancel, []).append(str(index))
        last_arrival = max(by_arrival, default=-1)
        live: set[int] = set()
        while iteration < limit:
            for index in by_arrival.get(iteration, ()):
                _, _, prompt, output, _ = requests[index]
                scheduler.add_request(
                    Request(
                        request_id=str(index),
                        prompt_token_ids=_prompt(index, prompt, shared),
                        sampling_params=SamplingParams(max_tokens=output, ignore_eos=True),
                        pooling_params=None,
                        arrival_time=float(iteration),
                        block_hasher=hasher,
                    )
                )
                live.add(index)
            cancels = [r for r in by_cancel.get(iteration, ()) if r in scheduler.requests]
            if cancels:
                scheduler.finish_requests(cancels, RequestStatus.FINISHED_ABORTED)
            step_fn()
            for index in [i for i in live if str(i) not in scheduler.requests]:
                finished_at[index] = iteration
                live.discard(index)
            iteration += 1
            if iteration > last_arrival and not scheduler.has_requests() and not batch_queue:
                break
        LOOP_SECONDS.append(time.perf_counter() - started)
        return {
            "planned": {k: planned[k] for k in ("num_blocks", "block_size", "max_model_len", "groups")},
            "resolved": {
                **planned["resolved"],
                "scheduler": sched_cls.__name__,
                "long_prefill_token_threshold": vc.scheduler_config.long_prefill_token_threshold,
                "watermark_blocks": getattr(scheduler.kv_cache_manager, "watermark_blocks", None),
                "reserve_full_isl": getattr(scheduler, "scheduler_reserve_full_isl", None),
                **{
                    name: getattr(scheduler, name, None)
                    for name in (
                        "max_num_scheduled_tokens",
                        "max_num_running_reqs",
                        "max_num_active_reqs",
                        "defer_block_free",
                        "local_prefill_interval",
                        "adaptive_long_prefill_threshold",
                        "num_lookahead_tokens",
                        "num_sampled_tokens_per_step",
                        "use_v2_model_runner",
                        "need_mamba_block_aligned_split",
                        "mamba_has_prefill_checkpoint_blocks",
                        "mamba_prefill_checkpoint_alignment",
                        "num_prefill_lookahead",
                        "prefix_replay_tokens",
                    )
                },
                "hash_block_size": hash_block_size,
                "groups": [type(g.kv_cache_spec).__name__ for g in kv_config.kv_cache_groups],
            },
            "baseline_free": baseline,
            "final_free": pool.get_num_free_blocks(),
            "iterations": iteration,
            "finished_at": {str(k): v for k, v in sorted(finished_at.items())},
            "steps": steps,
        }


if __name__ == "__main__":
    try:
        result = {"ok": run()}
    except Exception as exc:
        message = (str(exc).strip().splitlines() or [""])[0][:400]
        result = {"error": {"type": type(exc).__name__, "message": message}}
        if os.environ.get("VLLM_CASE_DEBUG"):
            traceback.print_exc()
    if LOOP_SECONDS:
        print(f"VLLM_LOOP_SECONDS {LOOP_SECONDS[0]:.6f}")
    print("VLLM_CASE_RESULT " + json.dumps(result))
