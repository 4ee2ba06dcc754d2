"""vLLM 0.33.0's v1 scheduler and KV cache manager over time: a port, proven step for step against vLLM's own
code (tests/fixtures/engines/vllm_sched.json, recorded by scripts/engines/record_vllm_sched.py).

What is ported, from vllm/v1/core: ``Scheduler.schedule`` (running requests first, then waiting ones FCFS;
chunked prefill within the token budget; ``max_num_seqs``; preemption of the last running request when blocks
run out, which frees all its blocks and recomputes), ``AsyncScheduler`` (output placeholders, a request
scheduled again before its previous token is back), ``update_from_output`` (tokens appended, requests ending at
``max_tokens`` or the context, stale output of preempted requests), ``finish_requests`` (a cancel),
``KVCacheManager.allocate_slots`` with ``scheduler_reserve_full_isl`` (a waiting request is admitted only if
its whole prompt fits), the prefix cache (``get_computed_blocks``: a preempted request finds its own blocks
again while they are not evicted; requests sharing a prompt prefix share its blocks) and ``BlockPool`` (free
queue order: unhashed blocks evicted first, a finished request's tail before its head). And ``EngineCore``'s
loop: ``step`` when one batch is in flight, ``step_with_batch_queue`` when two (async scheduling).

KV cache groups: one full-attention group (dense, GQA and MLA models; KVCacheManager); several without prefix
caching (sliding window, chunked-local, Mamba state: GroupedKVCacheManager); full attention with sliding-window
or chunked-local groups and prefix caching (HybridKVCacheManager); full attention with Mamba / linear-attention
state groups and prefix caching, vLLM's "align" mode (AlignKVCacheManager). FCFS, no speculative decoding,
LoRA, encoder inputs or KV connectors. Prompts are distinct per request unless they share a declared prefix.

The port follows vLLM's own files: request.py (the request), block_pool.py (BlockPool), kv_cache_manager.py
(KVCacheManager, the groups without prefix caching), kv_cache_coordinator.py (the hybrid and align managers),
scheduler.py (Scheduler, AsyncScheduler's placeholders), engine.py (EngineCore's loop).
"""

from kvplan.simulation.vllm.engine import EngineLoop, run_by_iteration
from kvplan.simulation.vllm.kv_cache_manager import GroupSpec
from kvplan.simulation.vllm.request import Request, Status
from kvplan.simulation.vllm.scheduler import Scheduler, SchedulerConfig, StepOutput, StepRecord

__all__ = ["EngineLoop", "GroupSpec", "Request", "Scheduler", "SchedulerConfig", "Status", "StepOutput", "StepRecord",
           "run_by_iteration"]  # fmt: skip
