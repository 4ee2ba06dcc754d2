"""Run SGLang 0.5.23's own scheduler over one workload, step by step, on a machine without a GPU.

usage (inside the SGLang venv; see scripts/engines/README.md):
    python scripts/engines/sglang_sched_case.py '{"model": DIR, "gpu": {...}, "available_bytes": A, ...,
                                                  "requests": [[arrive, prompt, output, cancel], ...]}'
    python scripts/engines/sglang_sched_case.py @case.json

The pools are SGLang's own, sized and built by ``KVCacheConfigurator.configure`` as in sglang_log_case.py but on
the CPU (``max_total_tokens`` keeps them small). The scheduler is SGLang's ``Scheduler`` with the parts that
need a GPU, a tokenizer or other processes left out (``Scheduler.__init__``'s init_* steps that touch the pools,
the tree cache, the schedule policy, chunked prefill, the batch result processor; IPC, metrics, watchdogs and the
model worker not run): the model worker is a stub whose ``forward_batch_generation`` samples token 1 for every
request whose prefill is complete. Requests enter through ``handle_generate_request`` with a
``TokenizedGenerateReqInput`` (distinct token ids per request unless a shared prefix is given; ``max_new_tokens``
= the output length; the stub never samples EOS, so a request ends by length, and SGLang reserves for it
new_token_ratio × its remaining tokens unless the case sets ``ignore_eos``); a cancel is
``abort_request(AbortReq(rid))`` before the iteration given.
The loop is ``event_loop_normal``'s body (``disable_overlap_schedule``) or ``event_loop_overlap``'s.
Prints one line ``SGLANG_CASE_RESULT {json}``: every iteration's batch (mode, each request's new tokens), the
running batch, the waiting queue, retractions, the free and evictable token counts.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
import types
from array import array
from collections import deque
from typing import Any

if len(sys.argv) > 1 and sys.argv[1].startswith("@"):
    with open(sys.argv[1][1:]) as f:
        sys.argv[1] = f.read()
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import sglang_case as sc  # configures the stand-in platform and its stubs from sys.argv[1]

CASE = sc.CASE

from sglang.srt.arg_groups import mamba_hook  # noqa: E402

mamba_hook._platform_supports_mamba_cache_extra_buffer = lambda: True  # Mamba state snapshots, as on a CUDA GPU

import torch  # noqa: E402

torch.Tensor.pin_memory = lambda self, *a, **k: self  # host staging for copies to the GPU: nothing to pin here


#: the scheduler-only flags, beside the sizing ones sglang_case passes already (the chunk, the prefill cap, the
#: overlap switch and the state pool's size)
sc.SERVER_ARGS += tuple(
    k for k in ("schedule_policy", "schedule_conservativeness", "enable_mixed_chunk") if k not in sc.SERVER_ARGS
)


def build() -> Any:
    """SGLang's Scheduler over SGLang's own pools, the GPU-, IPC- and model-bound parts left out."""
    import torch
    from sglang.srt.managers import scheduler as sm
    from sglang.srt.mem_cache import kv_cache_builder
    from sglang.srt.runtime_context import get_schedule

    sa, mc, kvc, _model_cls, _window = sc.configurator()
    kvc.device = "cpu"
    pools = kvc.configure(pre_model_load_memory=CASE["pre_bytes"] / (1 << 30))
    alloc = pools.token_to_kv_pool_allocator
    for part in (alloc, getattr(alloc, "full_attn_allocator", None), getattr(alloc, "swa_attn_allocator", None)):
        if hasattr(part, "use_triton_kernels"):
            part.use_triton_kernels = False  # the paged allocator's naive path (the SWA allocator's two): same pages
    sched = get_schedule()

    class Runner:
        pass

    runner = Runner()
    runner.token_to_kv_pool = pools.token_to_kv_pool
    runner.token_to_kv_pool_allocator = pools.token_to_kv_pool_allocator
    runner.req_to_token_pool = pools.req_to_token_pool
    runner.model_config = mc
    runner.spec_algorithm = kvc.spec_algorithm
    runner.mtp_draft_device_pools = ()
    runner.mtp_draft_mamba_pools = ()
    runner.prefill_aware_swa = False
    runner.canary_manager = None
    runner.attn_backend = types.SimpleNamespace()
    runner.device = "cpu"
    from sglang.srt.model_executor.model_runner_components.ngram_embedding_manager import NgramEmbeddingManager

    runner.ngram_embedding_manager = NgramEmbeddingManager.from_model(
        model=None, model_config=mc, req_to_token_pool=pools.req_to_token_pool,
        max_running_requests=pools.max_running_requests, device="cpu",
    )  # fmt: skip
    return sa, mc, kvc, pools, runner, sched, sm, kv_cache_builder, torch


FORWARD_STREAM: Any = None
GROUP = types.SimpleNamespace(cpu_group=None, device_group=None, world_size=1, rank=0, rank_in_group=0,
                              is_first_rank=True, is_last_rank=True, ranks=[0], local_rank=0, first_rank=0,
                              last_rank=0)  # fmt: skip


class Worker:
    """The model worker, as the scheduler sees it: the pools, the worker info, and a forward that samples token 1
    for every request whose prefill completes (a partial chunk samples nothing; the scheduler decides that)."""

    def __init__(self, runner: Any, pools: Any, mc: Any, sched: Any, kvc: Any) -> None:
        self.model_runner = runner
        self.model_config = mc
        self.pools = pools
        self.sched = sched
        self.is_hybrid_swa = bool(kvc.is_hybrid_swa)
        self.sliding_window_size = kvc.sliding_window_size
        self.random_seed = 0
        self.device = "cpu"

    def get_memory_pool(self) -> Any:
        return self.pools.req_to_token_pool, self.pools.token_to_kv_pool_allocator

    def get_tokens_per_layer_info(self) -> Any:
        return self.pools.full_max_total_num_tokens, self.pools.swa_max_total_num_tokens

    def get_pad_input_ids_func(self) -> Any:
        return None

    def forward_batch_generation(self, batch: Any, **kw: Any) -> Any:
        import torch
        from sglang.srt.managers.utils import GenerationBatchResult

        return GenerationBatchResult(next_token_ids=torch.ones(batch.batch_size(), dtype=torch.int64))

    def get_worker_info(self) -> Any:
        kv_capacity = self.pools.max_total_num_tokens
        max_req_len = min(self.model_config.context_len - 1, kv_capacity - 1)
        pools = self.pools
        sched = self.sched
        return (pools.max_total_num_tokens, sched.max_prefill_tokens, pools.max_running_requests,
                sched.max_queued_requests, max_req_len, max_req_len - 5, 0, "cpu", None, None, None, None)  # fmt: skip


def scheduler() -> Any:
    sa, mc, kvc, pools, runner, sched, sm, _kcb, torch = build()
    worker = Worker(runner, pools, mc, sched, kvc)
    global FORWARD_STREAM
    FORWARD_STREAM = runner.forward_stream = torch.cpu.Stream()
    S = sm.Scheduler
    noop = lambda self, *a, **k: None  # noqa: E731

    def init_model_worker(self: Any) -> None:
        self.tp_worker = self.model_worker = worker
        self.draft_worker = None
        (self.max_total_num_tokens, self.max_prefill_tokens, self.max_running_requests, self.max_queued_requests,
         self.max_req_len, self.max_req_input_len, self.random_seed, self.device, self.forward_stream, _, _, _
         ) = worker.get_worker_info()  # fmt: skip
        self.min_free_slots_delayer = None
        self.pad_input_ids_func = None
        self.forward_stream = FORWARD_STREAM
        self.schedule_stream = torch.cpu.Stream()
        from sglang.srt.runtime_context import get_context, get_parallel

        if not get_parallel().pp_max_micro_batch_size:  # as init_model_worker does
            get_context().override(
                "scheduler.pp_max_micro_batch_size_default",
                pp_max_micro_batch_size=max(self.max_running_requests // get_parallel().pp_size, 1),
            )
        for name in ("tp_group", "attn_tp_group", "attn_cp_group", "pp_group", "world_group", "dp_tp_group"):
            setattr(self, name, GROUP)
        for name in ("tp_cpu_group", "attn_tp_cpu_group", "attn_cp_cpu_group", "dp_tp_cpu_group"):
            setattr(self, name, None)

    real_ipc = S.init_ipc_channels

    class Sink:
        def __getattr__(self, name: str) -> Any:
            return lambda *a, **k: None

    def init_ipc_channels(self: Any, port_args: Any) -> None:
        real_ipc(self, port_args)
        import dataclasses

        sends = {f.name: Sink() for f in dataclasses.fields(self.ipc_channels) if f.name.startswith("send_")}
        self.ipc_channels = dataclasses.replace(self.ipc_channels, **sends)
        self.recv_from_tokenizer = Sink()

    S.init_ipc_channels = init_ipc_channels
    for name in ("init_idle_sleeper",
                 "init_mamba_backend", "init_soft_watchdog", "emit_metrics_constants", "maybe_init_hccl_dp_prewarm",
                 "init_watch_dog_memory_saver_input_blocker",
                 "init_request_receiver", "init_rank_consensus_checker",
                 "init_startup_timing_begin", "init_startup_timing_summary"):  # fmt: skip
        setattr(S, name, noop)
    S.init_weight_updater = lambda self: setattr(self, "weight_updater", Sink())
    S.init_profiler = lambda self: setattr(self, "profiler_manager", Sink())
    S.init_model_worker = init_model_worker
    from sglang.srt.runtime_context import get_parallel

    group = GROUP
    ranks = {"attn_tp_rank": 0, "attn_cp_rank": 0, "tp_rank": 0, "pp_rank": 0, "attn_dp_rank": 0, "moe_ep_rank": 0,
             "moe_tp_rank": 0, "dp_rank": 0, "attn_tp_size": 1, "attn_cp_size": 1, "attn_dp_size": 1}  # fmt: skip
    groups = dict.fromkeys(("tp_group", "attn_tp_group", "attn_cp_group", "pp_group", "world_group"), group)
    for name, value in {**ranks, **groups}.items():
        try:
            get_parallel().override_permanently(**{name: value})
        except Exception as exc:  # a name this version does not have, or derives
            print("parallel:", name, type(exc).__name__, exc, file=sys.stderr)
    sm.bootstrap.init_parallel_runtime = lambda **k: None
    sm.bootstrap.init_layer_runtime = lambda **k: None
    from sglang.srt.mem_cache import allocation

    # the index bookkeeping in Python instead of Triton kernels (the same writes, on the CPU)
    allocation.attention_backends = lambda: ("torch_native", "torch_native")
    from sglang.srt.server_args import PortArgs

    return S(sa, PortArgs.init_new(sa)), pools


def prompt_ids(i: int, n: int, shared: int) -> list[int]:
    """Request i's n prompt ids: the shared prefix (the same ids in every request), then ids of its own."""
    head = [7 + j % 50 for j in range(min(shared, n))]
    own = [1000 + i] + [(i * 31 + j) % 90000 + 100 for j in range(n - len(head) - 1)]
    return head + own[: n - len(head)]


def rid(i: int) -> str:
    """Request ids of one width: SGLang's abort_request aborts every request whose id starts with the one given."""
    return f"{i:08d}"


TRACE = os.environ.get("SGLANG_CASE_TRACE")  # development only: each request's KV and the tree, to stderr


def trace(s: Any, record: dict[str, Any]) -> None:
    """What the recording does not keep, for porting: each live request's KV bookkeeping and the radix tree
    (run with SGLANG_UNIFIED_RADIX_TREE_CORE_BACKEND=python so the nodes can be read)."""
    out = [
        f"== it {record['it']} {json.dumps({k: v for k, v in record.items() if k != 'it'})}"
        f" queue={len(getattr(s, 'result_queue', ()) or ())} skip={getattr(s, 'enable_skip_finishing_decode', None)}"
    ]
    reqs = list(s.running_batch.reqs) + list(s.waiting_queue)
    if s.chunked_req is not None and s.chunked_req not in reqs:
        reqs.append(s.chunked_req)
    for r in reqs:
        kv = r.kv
        ev = {k.name: v for k, v in kv.component_evicted_seqlens.items()}
        out.append(
            f"  req {int(r.rid)} out={len(r.output_ids)} prot={kv.cache_protected_len} "
            f"alloc={kv.kv_allocated_len} ev={ev}"
            + (
                f" mamba={kv.mamba_pool_idx is not None} pp={kv.mamba_ping_pong_track_buffer is not None} "
                f"track={kv.mamba_last_track_seqlen} prev={kv.mamba_prev_track_seqlen}"
                if hasattr(kv, "mamba_last_track_seqlen") and hasattr(s.req_to_token_pool, "mamba_allocator")
                else ""
            )
        )
    core = getattr(s.tree_cache, "tree_core", None)
    root = getattr(core, "root_node", None)
    if root is not None:

        def walk(n: Any, depth: int, pos: int) -> None:
            for c in n.children.values():
                cd = c.component_data
                parts = []
                for ct, d in enumerate(cd):
                    if d is None:
                        continue
                    v = None if d.value is None else len(d.value)
                    parts.append(f"{ct}:{v}/L{d.lock_ref}")
                out.append(f"  {'  ' * depth}[{pos},{pos + len(c.key)}) {' '.join(parts)}")
                walk(c, depth + 1, pos + len(c.key))

        walk(root, 0, 0)
    print("\n".join(out), file=sys.stderr)


def pop_and_process(s: Any) -> None:
    batch, result = s.result_queue.popleft()
    s.process_batch_result(batch, result)


def main() -> dict[str, Any]:  # noqa: C901 - the event loops, as SGLang writes them
    from sglang.srt.managers.io_struct import AbortReq, TokenizedGenerateReqInput
    from sglang.srt.sampling.sampling_params import SamplingParams

    s, pools = scheduler()
    overlap = not CASE.get("disable_overlap_schedule", False)
    requests = CASE["requests"]
    shared = CASE.get("shared_prefix", 0)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    from kvplan.simulation.workload import IterationPlan  # the same reading of a workload as the port's

    # a closed loop (concurrency N): N in flight, the next arrives after one finishes
    workload = IterationPlan.of(requests, CASE.get("concurrency"))
    live: dict[int, Any] = {}
    steps: list[dict[str, Any]] = []
    alloc, tree = s.token_to_kv_pool_allocator, s.tree_cache
    if overlap:
        s.enable_skip_finishing_decode = True
        s.result_queue = deque()
    s._war_barrier_enabled = False  # run_event_loop's fences between streams: nothing to fence on the CPU
    started = time.perf_counter()
    for it in range(CASE.get("limit", 200_000)):
        for i in workload.arrivals.get(it, ()):
            _, prompt, output, _ = requests[i]
            params = SamplingParams(max_new_tokens=output, ignore_eos=CASE.get("ignore_eos", False))
            params.normalize(None)  # as the tokenizer manager does before sending
            s.handle_generate_request(TokenizedGenerateReqInput(
                rid=rid(i), input_text=None, input_ids=array("q", prompt_ids(i, prompt, shared)), input_embeds=None,
                mm_inputs=None, token_type_ids=None,
                sampling_params=params,
                return_logprob=False, logprob_start_len=-1, top_logprobs_num=0, token_ids_logprob=None,
                stream=False,
            ))  # fmt: skip
            live[i] = next(r for r in reversed(s.waiting_queue) if r.rid == rid(i))
        for i in workload.cancels.get(it, ()):
            s.abort_request(AbortReq(rid=rid(i)))
        plan = s.get_next_batch_to_run(running_batch=s.running_batch, last_batch=s.last_batch)
        s.running_batch = plan.running_batch
        batch = plan.batch_to_run
        record: dict[str, Any] = {"it": it}
        if batch is not None:
            if batch.forward_mode.is_extend():
                record["extend"] = [[int(r.rid), int(n)] for r, n in zip(batch.reqs, batch.extend_lens, strict=False)]
                if batch.decoding_reqs:
                    record["mixed"] = [int(r.rid) for r in batch.decoding_reqs]
            else:
                record["decode"] = [int(r.rid) for r in batch.reqs]
        record["running"] = len(s.running_batch.reqs)
        record["waiting"] = len(s.waiting_queue)
        record["retracted"] = (
            s.metrics_reporter.num_retracted_reqs if hasattr(s.metrics_reporter, "num_retracted_reqs") else None
        )
        s.metrics_reporter.num_retracted_reqs = 0
        record["ratio"] = round(s.new_token_ratio_tracker.current, 6)
        if not overlap:  # event_loop_normal
            if batch is not None:
                s.process_batch_result(batch, s.run_batch(batch))
        else:  # event_loop_overlap
            disable = s.is_disable_overlap_for_batch(batch, last_batch=s.last_batch)
            if disable:
                pop_and_process(s)
            result = None
            if batch is not None:
                result = s.run_batch(batch)
                s._apply_war_barrier()
                s.result_queue.append((batch.copy(), result))
            if s.last_batch is not None and not disable:
                pop_and_process(s)
            if s.is_generation:
                s.launch_batch_sample_if_needed(result, batch)
        s.last_batch = batch
        record["free"] = int(alloc.available_size())
        record["evictable"] = int(tree.evictable_size())
        if hasattr(alloc, "swa_available_size"):  # the sliding-window pool beside the full one ("free": the smaller)
            record["full_free"] = int(alloc.full_available_size())
            record["swa_free"] = int(alloc.swa_available_size())
            record["swa_evictable"] = int(tree.swa_evictable_size())
        mamba = getattr(s.req_to_token_pool, "mamba_allocator", None) or getattr(
            s.req_to_token_pool, "mamba_pool", None
        )
        if mamba is not None:  # the Mamba state slots
            record["mamba_free"] = int(mamba.available_size())
            record["mamba_evictable"] = int(tree.mamba_evictable_size())
        steps.append(record)
        if TRACE:
            trace(s, record)
        ended = [i for i, r in live.items() if r.finished()]
        for i in ended:
            del live[i]
        workload.ended(it, len(ended))  # the clients send their next requests
        idle = batch is None and not s.waiting_queue and s.running_batch.is_empty() and s.chunked_req is None
        if it > workload.last and idle and not s.result_queue:
            break
    print(f"SGLANG_LOOP_SECONDS {time.perf_counter() - started:.6f}")  # the event loop, start-up not (the bench)
    return {"max_total_num_tokens": pools.max_total_num_tokens, "max_running_requests": pools.max_running_requests,
            "chunked_prefill_size": s.chunked_prefill_size, "max_prefill_tokens": s.max_prefill_tokens,
            "page_size": s.page_size, "context_len": s.model_config.context_len,
            "max_req_input_len": s.max_req_input_len, **swa_pool(s, pools), **mamba_pool(s),
            "steps": steps}  # fmt: skip


def mamba_pool(s: Any) -> dict[str, Any]:
    """A Mamba hybrid's state slots and the grids its checkpoints land on (SGLang's settings as resolved)."""
    pool = s.req_to_token_pool
    alloc = getattr(pool, "mamba_allocator", None)
    if alloc is None:
        return {}
    from sglang.srt.runtime_context import get_exec, mamba_cache_chunk_size, mamba_checkpoint_grid, mamba_track_grid

    m = get_exec().mamba
    page = s.tree_cache.page_size
    return {"mamba_slots": int(alloc.size), "mamba_cache_chunk_size": int(mamba_cache_chunk_size()),
            "mamba_checkpoint_grid": int(mamba_checkpoint_grid(page)), "mamba_track_grid": int(mamba_track_grid(page)),
            "mamba_track_interval": int(m.mamba_track_interval),
            "mamba_extra_buffer": bool(getattr(pool, "enable_mamba_extra_buffer", False)),
            "mamba_extra_buffer_lazy": bool(m.enable_mamba_extra_buffer_lazy),
            "mamba_max_states_per_path": int(m.mamba_max_states_per_path),
            "mamba_ping_pong_size": int(getattr(pool, "mamba_ping_pong_track_buffer_size", 0)),
            "mamba_initial_tracking_slots": int(getattr(pool, "mamba_initial_tracking_slots", 0))}  # fmt: skip


def swa_pool(s: Any, pools: Any) -> dict[str, Any]:
    """A hybrid sliding-window model's second pool: its size and the window the radix tree keeps (the tree's
    swa_retain_window, SGLang's attention window: gpt-oss's 128 is 127 there)."""
    if not getattr(s, "is_hybrid_swa", False):
        return {}
    alloc = s.token_to_kv_pool_allocator
    return {"swa_max_total_num_tokens": int(alloc.size_swa), "sliding_window_size": int(s.tree_cache.swa_retain_window),
            "allocator": type(alloc).__name__}  # fmt: skip


if __name__ == "__main__":
    try:
        result: dict[str, Any] = {"ok": main()}
    except Exception as exc:
        result = {"error": {"type": type(exc).__name__, "message": str(exc).strip().splitlines()[0][:400]}}
        if os.environ.get("SGLANG_CASE_DEBUG"):
            traceback.print_exc()
    print("SGLANG_CASE_RESULT " + json.dumps(result))
