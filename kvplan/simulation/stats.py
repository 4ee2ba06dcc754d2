"""What a simulation keeps, in memory bounded whatever the run's length (issue 26).

- ``Quantiles``: values for nearest-rank percentiles, kept exactly (8 bytes each, in an array) up to
  ``EXACT_VALUES``; past that, in a histogram of logarithmic buckets, each ``RESOLUTION`` (0.01 %) wide, so a
  percentile is within 0.01 % of the exact one and the memory is bounded by the range of the values, not their
  number (an hour at 10 requests/s is millions of gaps between tokens).
- ``Series``: the per-step series at a bounded resolution: one row per engine step up to ``MAX_SERIES_ROWS``;
  past that, pairs of rows merge (2, 4, 8, … consecutive steps per row): a row's start is its first step's, its
  seconds, tokens, bytes, FLOPs and preemptions are sums, its running, waiting and blocks in use are peaks.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field

EXACT_VALUES = 1 << 22  # 32 MiB of doubles per series of values
RESOLUTION = 1e-4
MAX_SERIES_ROWS = 1 << 16
MAX_REQUEST_ROWS = 100_000  # requests reported one by one (JSON); the statistics cover every request
_LOG_STEP = math.log1p(2 * RESOLUTION)  # a bucket's width in log space
_ZERO = -(1 << 62)  # the bucket of zero


def rank(count: int, q: float) -> int:
    """The index of the nearest-rank percentile ``q`` (0..100) among ``count`` ordered values."""
    return max(0, min(count - 1, math.ceil(q / 100 * count) - 1))


def percentile(values: list[float] | tuple[float, ...], q: float) -> float | None:
    """The nearest-rank percentile (q in 0..100) of ``values``; None for none."""
    return sorted(values)[rank(len(values), q)] if values else None


class Quantiles:
    """Nearest-rank percentiles and the maximum of a stream of non-negative values."""

    __slots__ = ("_buckets", "_exact", "count", "maximum")

    def __init__(self) -> None:
        self._exact: array[float] | None = array("d")
        self._buckets: dict[int, int] = {}
        self.count = 0
        self.maximum: float | None = None

    def add(self, value: float) -> None:
        self.count += 1
        if self.maximum is None or value > self.maximum:
            self.maximum = value
        if self._exact is not None:
            self._exact.append(value)
            if len(self._exact) > EXACT_VALUES:
                self._bucket_all(self._exact)
                self._exact = None
        else:
            self._count(value, 1)

    def extend(self, values: list[float]) -> None:
        """``add`` for each of ``values``, in one call (the gaps of one engine step's tokens)."""
        if not values:
            return
        exact = self._exact
        if exact is not None and len(exact) + len(values) > EXACT_VALUES:
            for v in values:
                self.add(v)
            return
        self.count += len(values)
        top = max(values)
        if self.maximum is None or top > self.maximum:
            self.maximum = top
        if exact is not None:
            exact.extend(values)
        else:
            self._bucket_all(values)

    def _bucket_all(self, values: list[float] | tuple[float, ...] | array[float]) -> None:
        """Each value into its bucket; a run of equal values (a step's tokens mostly share one gap) bucketed once."""
        run, n = 0.0, 0
        for v in values:
            if n and v == run:
                n += 1
                continue
            if n:
                self._count(run, n)
            run, n = v, 1
        if n:
            self._count(run, n)

    def _count(self, value: float, n: int) -> None:
        """``n`` values of ``value`` into its bucket (0.01 %-wide in log space; zero its own)."""
        key = _ZERO if value <= 0 else math.floor(math.log(value) / _LOG_STEP)
        self._buckets[key] = self._buckets.get(key, 0) + n

    @property
    def exact(self) -> bool:
        return self._exact is not None

    def percentile(self, q: float) -> float | None:
        """The nearest-rank percentile (q in 0..100); None for no values."""
        if not self.count:
            return None
        k = rank(self.count, q)
        if self._exact is not None:
            return sorted(self._exact)[k]
        seen = 0
        for key in sorted(self._buckets):
            seen += self._buckets[key]
            if seen > k:
                if key == _ZERO:
                    return 0.0
                return math.exp((key + 0.5) * _LOG_STEP)  # the bucket's middle: within RESOLUTION of every value in it
        return self.maximum  # pragma: no cover - the counts add up to count

    def percentiles(self, *qs: float) -> tuple[float | None, ...]:
        if self._exact is not None and self.count:
            ordered = sorted(self._exact)
            return tuple(ordered[rank(self.count, q)] for q in qs)
        return tuple(self.percentile(q) for q in qs)


@dataclass(slots=True)
class StepPoint:
    """One engine step of the series (or, past MAX_SERIES_ROWS steps, several merged). Slotted, not frozen: one is
    built per engine step, and a frozen dataclass's __init__ costs twice as much (an hour's trace: 0.8 s)."""

    start: float  # seconds
    seconds: float  # the step's floor (merged: their sum)
    prefill_tokens: int
    decode_tokens: int
    running: int
    waiting: int
    blocks_used: int
    preempted: int
    bytes_read: int
    flops: float
    compute_bound: bool

    def merged(self, later: StepPoint) -> StepPoint:
        return StepPoint(
            self.start,
            self.seconds + later.seconds,
            self.prefill_tokens + later.prefill_tokens,
            self.decode_tokens + later.decode_tokens,
            max(self.running, later.running),
            max(self.waiting, later.waiting),
            max(self.blocks_used, later.blocks_used),
            self.preempted + later.preempted,
            self.bytes_read + later.bytes_read,
            self.flops + later.flops,
            self.compute_bound or later.compute_bound,
        )


@dataclass
class Series:
    """The steps at a bounded resolution, and what the report reads from every step."""

    rows: list[StepPoint] = field(default_factory=list)
    per_row: int = 1  # consecutive steps in each row
    # the row being filled, as StepPoint's fields (a list, so a step folds in without a StepPoint of its own)
    _pending: list[float] | None = None
    _pending_n: int = 0
    steps: int = 0
    prefill_steps: int = 0
    peak_blocks: int = 0
    peak_running: int = 0
    peak_waiting: int = 0
    preemptions: int = 0
    prefill_seconds: Quantiles = field(default_factory=Quantiles)
    decode_seconds: Quantiles = field(default_factory=Quantiles)
    decode_bytes: Quantiles = field(default_factory=Quantiles)

    def add(self, p: StepPoint) -> None:
        self.steps += 1
        if p.blocks_used > self.peak_blocks:
            self.peak_blocks = p.blocks_used
        if p.running > self.peak_running:
            self.peak_running = p.running
        if p.waiting > self.peak_waiting:
            self.peak_waiting = p.waiting
        self.preemptions += p.preempted
        if p.prefill_tokens:
            self.prefill_steps += 1
            self.prefill_seconds.add(p.seconds)
        elif p.decode_tokens:
            self.decode_seconds.add(p.seconds)
            self.decode_bytes.add(float(p.bytes_read))
        if self.per_row == 1:
            self._close(p)
            return
        acc = self._pending
        if acc is None:
            self._pending = [p.start, p.seconds, p.prefill_tokens, p.decode_tokens, p.running, p.waiting,
                             p.blocks_used, p.preempted, p.bytes_read, p.flops, p.compute_bound]  # fmt: skip
        else:  # as StepPoint.merged: sums, peaks, the first start
            acc[1] += p.seconds
            acc[2] += p.prefill_tokens
            acc[3] += p.decode_tokens
            if p.running > acc[4]:
                acc[4] = p.running
            if p.waiting > acc[5]:
                acc[5] = p.waiting
            if p.blocks_used > acc[6]:
                acc[6] = p.blocks_used
            acc[7] += p.preempted
            acc[8] += p.bytes_read
            acc[9] += p.flops
            acc[10] = acc[10] or p.compute_bound
        self._pending_n += 1
        if self._pending_n == self.per_row:
            row = self._row()
            assert row is not None
            self._pending, self._pending_n = None, 0
            self._close(row)

    def _row(self) -> StepPoint | None:
        acc = self._pending
        if acc is None:
            return None
        return StepPoint(acc[0], acc[1], int(acc[2]), int(acc[3]), int(acc[4]), int(acc[5]), int(acc[6]), int(acc[7]),
                         int(acc[8]), acc[9], bool(acc[10]))  # fmt: skip

    def _close(self, row: StepPoint) -> None:
        self.rows.append(row)
        if len(self.rows) >= MAX_SERIES_ROWS:
            self.rows = [a.merged(b) for a, b in zip(self.rows[::2], self.rows[1::2], strict=True)]
            self.per_row *= 2

    def finished_rows(self) -> tuple[StepPoint, ...]:
        """Every row, the last one partly filled included."""
        row = self._row()
        return (*self.rows, *((row,) if row is not None else ()))


MAX_FAILURE_REASONS = 1000


@dataclass
class RequestStats:
    """Every request's outcome, folded in as it ends: counts and the latency streams."""

    arrived: int = 0
    served: int = 0  # to the end, neither cancelled nor failed
    cancelled: int = 0
    failed: int = 0  # refused or failed by the engine (error set)
    tokens: int = 0  # output tokens the clients saw
    preempted: int = 0  # requests preempted at least once
    failures: dict[str, int] = field(default_factory=dict)  # error → requests (the first MAX_FAILURE_REASONS)
    ttft: Quantiles = field(default_factory=Quantiles)
    e2e: Quantiles = field(default_factory=Quantiles)  # served requests
    itl: Quantiles = field(default_factory=Quantiles)

    def fail(self, error: str) -> None:
        self.failed += 1
        if error in self.failures or len(self.failures) < MAX_FAILURE_REASONS:
            self.failures[error] = self.failures.get(error, 0) + 1
