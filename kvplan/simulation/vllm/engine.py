"""EngineCore's busy loop (vllm/v1/engine/core.py: step, step_with_batch_queue) and the recorder's driver."""

from __future__ import annotations

from collections import deque
from collections.abc import MutableSequence, Sequence
from dataclasses import dataclass, field

from kvplan.simulation.vllm.request import Request
from kvplan.simulation.vllm.scheduler import Scheduler, SchedulerConfig, StepOutput, StepRecord
from kvplan.simulation.workload import IterationPlan


@dataclass
class EngineLoop:
    """EngineCore's busy loop: add and abort between steps, then step() or step_with_batch_queue()."""

    scheduler: Scheduler
    steps: MutableSequence[StepRecord] = field(default_factory=list)  # a deque(maxlen=1) keeps only the latest
    queue: deque[StepOutput] = field(default_factory=deque)
    iteration: int = 0
    last: StepOutput | None = None  # what the latest schedule() of this iteration scheduled (None: none ran)

    @property
    def batches(self) -> int:
        return 2 if self.scheduler.config.async_scheduling else 1

    def _schedule(self) -> StepOutput:
        s = self.scheduler
        out, preempted = s.schedule()
        self.last = out
        self.steps.append(
            StepRecord(
                self.iteration,
                tuple(out.scheduled.items()),
                len(s.running),
                len(s.waiting),
                preempted,
                s.kv.pool.num_free(),
            )
        )
        return out

    def step(self) -> list[Request]:
        """One engine-loop iteration after arrivals and cancels; the requests that ended."""
        s = self.scheduler
        ended: list[Request] = []
        self.last = None
        if self.batches == 1:
            if s.has_requests():
                ended = s.update_from_output(self._schedule())
        else:
            done = False
            if s.has_requests():
                out = self._schedule()
                self.queue.appendleft(out)
                if len(self.queue) < self.batches and (bool(out.scheduled) or s.has_requests()):
                    done = True
            elif not self.queue:
                done = True
            if not done:
                ended = s.update_from_output(self.queue.pop())
        self.iteration += 1
        return ended

    def idle(self) -> bool:
        return not self.scheduler.has_requests() and not self.queue


def run_by_iteration(
    config: SchedulerConfig,
    requests: Sequence[tuple[int, int, int, int | None]],
    shared_prefix: int = 0,
    limit: int = 1_000_000,
) -> EngineLoop:
    """The workload as the recorder drives vLLM: request i = (arrival iteration, prompt, output tokens, cancel
    iteration or None) is added, or aborted, before the engine-loop iteration of that number."""
    loop = EngineLoop(Scheduler(config))
    plan = IterationPlan.of(requests)
    while loop.iteration < limit:
        for i in plan.arrivals.get(loop.iteration, ()):
            _, prompt, output, _ = requests[i]
            loop.scheduler.add(Request(i, prompt, output, shared_prefix=shared_prefix))
        loop.scheduler.abort(plan.cancels.get(loop.iteration, ()))
        loop.step()
        if loop.iteration > plan.last and loop.idle():
            break
    return loop
