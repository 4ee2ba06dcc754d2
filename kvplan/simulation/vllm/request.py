"""A request as vLLM's scheduler sees it (vllm/v1/request.py): its status, tokens and block hashes."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

#: a block's hash: the shared prompt prefix (-1) or the request's own tokens, and the block's index
BlockKey = tuple[int, ...]


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


class Status(Enum):
    WAITING = "waiting"
    RUNNING = "running"
    PREEMPTED = "preempted"
    FINISHED = "finished"
    ABORTED = "aborted"


@dataclass(eq=False, slots=True)
class Request:
    """vllm.v1.request.Request, the fields the scheduler reads."""

    rid: int
    prompt: int
    max_tokens: int
    shared_prefix: int = 0
    outputs: int = 0
    num_computed: int = 0
    placeholders: int = 0
    in_flight: int = 0
    stale: int = 0
    is_prefill_chunk: bool = False
    next_decode_eligible_step: int = 0
    preemptions: int = 0
    status: Status = Status.WAITING
    shared_boundary: int = 0  # shared_prefix_boundary: a junction a sparse group has not cached yet
    #: prompt + outputs (vLLM's num_tokens), kept as a field: the scheduler reads it for every request every step
    num_tokens: int = field(init=False)

    def __post_init__(self) -> None:
        self.num_tokens = self.prompt + self.outputs

    def add_output(self) -> None:
        """One sampled token appended."""
        self.outputs += 1
        self.num_tokens += 1

    @property
    def finished(self) -> bool:
        return self.status in (Status.FINISHED, Status.ABORTED)

    def key(self, index: int, block_size: int) -> BlockKey:
        """The hash of block ``index``: its tokens and all before them (the shared prefix, or this request)."""
        return (-1, index) if (index + 1) * block_size <= self.shared_prefix else (self.rid, index)
