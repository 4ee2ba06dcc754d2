"""SGLang's scheduler over time: the port (kvplan.simulation.sglang.scheduler) on the roofline's clock.

Requests arrive at their times and are added before the first iteration that starts after them (SGLang's
``ingest_requests`` at the top of its event loop); a cancel aborts the request there too. Each iteration's batch
takes the floor time of what it computes; a token exists when the batch that samples it ends (with the overlap
schedule SGLang processes that result one iteration later, which the port follows for what it schedules, not for
when the GPU produced the token). KV in use counts the tokens neither free nor held by the radix cache as
evictable (what a request could not get back), in the full pool when a sliding-window pool stands beside it.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from kvplan.simulation.roofline import CostModel
from kvplan.simulation.run import Clients, SimResult, SimulationError, StepLimits, check_steps
from kvplan.simulation.sglang.scheduler import Batch, Req, Scheduler, SchedulerConfig
from kvplan.simulation.stats import Series, StepPoint
from kvplan.simulation.workload import Workload


@dataclass(frozen=True)
class SglangSimulator:
    """SGLang 0.5.23's scheduler and event loop over time."""

    config: SchedulerConfig
    overlap: bool = True  # event_loop_overlap (SGLang's default); False: --disable-overlap-schedule
    steps_of: ClassVar[str] = "engine"

    def limits(self) -> StepLimits:
        c = self.config
        # chunking off: a batch's first prompt prefills whole, past --max-prefill-tokens
        batch = c.chunked_prefill_size or max(c.max_prefill_tokens, c.context_len)
        return StepLimits(c.max_running_requests, batch, None, c.context_len)

    def run(
        self, cost: CostModel, workload: Workload, progress: Callable[[float, int], None] | None = None
    ) -> SimResult:
        return simulate(self.config, self.overlap, cost, workload, progress)


def _work(batch: Batch) -> list[tuple[int, int, Req]]:
    """(tokens computed, tokens of context before them, request) for every row of the batch."""
    if batch.extend:
        rows = [(r.extend_len, r.prefix_len, r) for r in batch.reqs]
        return rows + [(1, r.kv - 1, r) for r in batch.decoding]
    return [(1, r.kv - 1, r) for r in batch.reqs]


def _sums(batch: Batch) -> tuple[int, int, int, int, int]:
    """The batch's rows, new tokens, decode rows, Σ (before + n) and Σ (n·before + n(n+1)/2), as _work gives them."""
    if not batch.extend and batch.sums is not None:  # a decode row: one token after kv - 1 of context
        ctx, decode = batch.sums
        return len(batch.reqs), len(batch.reqs), decode, ctx, ctx
    new = decode = ctx = pairs = 0
    if batch.extend:
        for r in batch.reqs:
            n, before = r.extend_len, r.prefix_len
            new += n
            ctx += before + n
            pairs += n * before + n * (n + 1) // 2
            if n == 1 and before >= r.prompt:
                decode += 1
        decoding: tuple[Req, ...] | list[Req] = batch.decoding
    else:
        decoding = batch.reqs
    for r in decoding:  # a decode row: one token after kv - 1 of context
        kv = r.kv
        new += 1
        ctx += kv
        pairs += kv
        if kv > r.prompt:
            decode += 1
    return len(batch.reqs) + (len(batch.decoding) if batch.extend else 0), new, decode, ctx, pairs


def simulate(  # noqa: C901 - one event loop
    config: SchedulerConfig,
    overlap: bool,
    cost: CostModel,
    workload: Workload,
    progress: Callable[[float, int], None] | None = None,
) -> SimResult:
    clients = Clients(workload, random.Random(workload.seed), None)
    results = clients.results
    s = Scheduler(config, overlap)
    series = Series()
    total = config.max_total_num_tokens
    t = 0.0
    idle_steps = 0
    iteration = 0
    replay = workload.in_steps  # arrivals and cancels by iteration, as the recorder drives SGLang
    while True:
        for spec in clients.due_step(iteration, t) if replay else clients.due(t):
            rid = clients.arrive(spec)  # one SGLang refuses still goes through the queue (as one token)
            s.add(rid, spec.prompt, spec.output, shared_prefix=workload.shared_prefix)
        for rid in [*clients.cancels_due(t), *(clients.step_cancels_due(iteration) if replay else ())]:
            if rid in results and s.abort(rid):
                clients.ended(rid, t, True)
        batch = s.next_batch()
        iteration += 1
        retracted = len(s.retracted_reqs)
        for req in s.retracted_reqs:
            results[req.rid].preemptions += 1
        s.retracted_reqs.clear()
        point = None
        if batch is not None:
            count, new, decode, ctx, pairs = _sums(batch)
            if cost.windowed:  # a window's history needs each row's context
                step = cost.step([(n, before) for n, before, _ in _work(batch)])
            else:
                step = cost.totals(count, new, ctx, pairs)
            point = (t, step, new - decode, decode, len(s.running.reqs), len(s.waiting))
            t += step.seconds
            idle_steps = 0
            check_steps(series.steps, t, workload, "engine")
            if progress is not None and series.steps % 2000 == 0:
                progress(t, clients.stats.arrived)
        else:
            idle_steps += 1
        done = s.launch(batch, end=t)
        if done is not None:
            ended = s.process(done)
            clients.sampled(s.sampled_rids, done.end)  # when their batch ended (a refused prompt's is no token)
            for req in ended:
                clients.ended(req.rid, done.end, req.aborted and req.error is None, req.error)
        if point is not None:  # KV in use once the iteration's results are in, as SGLang's pool shows it
            start, step, prefill, decode, running, waiting = point
            series.add(StepPoint(start, step.seconds, prefill, decode, running, waiting, s.in_use(), retracted,
                                 step.bytes, step.flops, step.compute_bound))  # fmt: skip
        if batch is None and not s.queue:
            if not s.waiting and not s.running.reqs and s.chunked is None:
                upcoming = clients.next_arrival()
                if upcoming is None:
                    break
                if not replay:
                    t = max(t, upcoming)
            elif idle_steps > 3:
                head = s.waiting[0]
                if config.swa_tokens is not None:  # recorded: SGLang 0.5.23 idles for ever with both pools whole
                    raise SimulationError(
                        f"a request of {head.fill:,} tokens can never be admitted: its prefill's reservation in "
                        f"SGLang's sliding-window pool ({config.swa_tokens:,} tokens, less the window its cached "
                        "prefix keeps locked) never fits, and SGLang waits for ever; a smaller "
                        "--chunked-prefill-size (the reservation is a chunk and a window) lets it in"
                    )
                raise SimulationError(
                    f"a request of {head.fill:,} tokens can never be admitted: SGLang's pool holds {total:,} tokens"
                )
    return SimResult(config, series, clients.stats, tuple(clients.kept), total, s.returned(), clients.end)
