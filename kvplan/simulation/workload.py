"""Workloads: requests arriving over time, with prompt and output lengths and cancels; generated from a seed or
read from a trace (JSONL or CSV of ``arrival, prompt_tokens, output_tokens[, cancel_after][,
cancel_after_tokens]``)."""

from __future__ import annotations

import csv
import io
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from kvplan.errors import BadInputError
from kvplan.sources.files import parse_json, read_text

#: a trace larger than this many requests is refused (a bounded read; simulate runs in memory), and so is a
#: generated workload expected to be larger (rate × duration, or concurrency)
MAX_TRACE_REQUESTS = 1_000_000


@dataclass(frozen=True)
class Lengths:
    """A token-length distribution: ``N`` (fixed), ``uniform:LO:HI`` or ``lognormal:MEDIAN:SIGMA``."""

    kind: str
    a: float
    b: float = 0.0

    def draw(self, rng: random.Random) -> int:
        if self.kind == "fixed":
            return int(self.a)
        if self.kind == "uniform":
            return rng.randint(int(self.a), int(self.b))
        return max(1, round(rng.lognormvariate(math.log(self.a), self.b)))

    def __str__(self) -> str:
        if self.kind == "fixed":
            return f"{int(self.a)}"
        if self.kind == "uniform":
            return f"uniform {int(self.a)}–{int(self.b)}"
        return f"lognormal median {int(self.a)} σ {self.b:g}"


MAX_TOKENS = 1 << 24  # no model's context is longer


def parse_lengths(text: str) -> Lengths:
    """``N``, ``uniform:LO:HI`` or ``lognormal:MEDIAN:SIGMA`` (raises ValueError)."""
    parts = text.strip().lower().split(":")
    try:
        if not text.isascii() or "_" in text:  # int() and float() take "１２" and "1_000"; strtod does not
            raise ValueError
        if len(parts) == 1:
            n = int(parts[0])
            if not 1 <= n <= MAX_TOKENS:
                raise ValueError
            return Lengths("fixed", n)
        if parts[0] == "uniform" and len(parts) == 3:
            lo, hi = int(parts[1]), int(parts[2])
            if not 1 <= lo <= hi <= MAX_TOKENS:
                raise ValueError
            return Lengths("uniform", lo, hi)
        if parts[0] == "lognormal" and len(parts) == 3:
            median, sigma = float(parts[1]), float(parts[2])
            if not (1 <= median <= MAX_TOKENS and 0 <= sigma <= 4):
                raise ValueError
            return Lengths("lognormal", median, sigma)
    except ValueError:
        pass
    raise ValueError(
        f"expected N, uniform:LO:HI or lognormal:MEDIAN:SIGMA (tokens from 1 to {MAX_TOKENS:,}; σ ≤ 4), not {text!r}"
    )


@dataclass(frozen=True)
class RequestSpec:
    """One request: when it arrives (s), its prompt and output tokens, and when the client cancels it, if it
    does: ``cancel_after`` seconds after arrival (a trace's) or that share of its output tokens (a drawn one), or
    ``cancel_after_tokens``, once it has seen that many output tokens (a trace's); whichever comes first."""

    arrival: float
    prompt: int
    output: int
    cancel_after: float | None = None
    cancel_after_tokens: int | None = None
    #: a replay (vLLM): added before this engine-loop iteration, aborted before ``cancel_step`` (not seconds)
    arrival_step: int | None = None
    cancel_step: int | None = None


@dataclass(frozen=True)
class Workload:
    """Generated: Poisson arrivals at ``rate`` per second, or ``concurrency`` requests always in flight (a new
    one when one ends), over ``duration`` seconds; or a trace's requests as they are."""

    prompt: Lengths = Lengths("fixed", 1024)
    output: Lengths = Lengths("fixed", 256)
    rate: float | None = None
    concurrency: int | None = None
    duration: float = 60.0
    cancel: float = 0.0  # probability a request is cancelled, after a uniform share of its decode time
    seed: int = 0
    shared_prefix: int = 0  # tokens every prompt starts with (the prefix cache shares them)
    trace: tuple[RequestSpec, ...] | None = None

    @property
    def in_steps(self) -> bool:
        """A trace whose arrivals are engine-loop iterations (a replay of a recorded run)."""
        return self.trace is not None and bool(self.trace) and self.trace[0].arrival_step is not None

    @property
    def span(self) -> float:
        """Seconds of arrivals: the duration, or a trace's last arrival (the run drains after)."""
        if self.trace is not None:
            return max((r.arrival for r in self.trace), default=0.0)
        return self.duration

    def describe(self) -> str:
        if self.trace is not None:
            return f"trace of {len(self.trace):,} requests"
        if self.rate is not None:
            arrivals = f"{self.rate:g} request{'' if self.rate == 1 else 's'}/s"
        else:
            arrivals = f"{self.concurrency} request{'' if self.concurrency == 1 else 's'} in flight"
        cancel = f", {self.cancel:.0%} cancelled" if self.cancel else ""
        return f"{arrivals} for {self.duration:g} s; prompt {self.prompt}, output {self.output}{cancel}"

    def arrivals(self, rng: random.Random) -> list[float]:
        """Poisson arrival times in [0, duration) (rate mode)."""
        assert self.rate is not None
        out: list[float] = []
        t = 0.0
        while True:
            t += rng.expovariate(self.rate)
            if t >= self.duration:
                return out
            out.append(t)


#: a trace of MAX_TRACE_REQUESTS requests is tens of MiB of JSONL
MAX_TRACE_BYTES = 256 << 20


def load_trace(path: str) -> tuple[RequestSpec, ...]:
    """A JSONL file (one object per line: arrival, prompt_tokens, output_tokens[, cancel_after][,
    cancel_after_tokens]) or a CSV with
    those column names; each line becomes a request as it is read (a day at 10 requests/s is 864,000)."""
    text = read_text(path, "a workload trace", MAX_TRACE_BYTES)
    out: list[RequestSpec] = []
    if path.lower().endswith((".jsonl", ".json")):
        for n, line in enumerate(io.StringIO(text), 1):
            if not line.strip():
                continue
            value = parse_json(line, f"{path}:{n}")  # bounded: depth, digits, no NaN
            if not isinstance(value, dict):
                raise BadInputError(f"{path}:{n}: expected an object with arrival, prompt_tokens, output_tokens")
            out.append(_trace_row(path, len(out) + 1, value))
            if len(out) > MAX_TRACE_REQUESTS:
                raise BadInputError(f"{path}: more than {MAX_TRACE_REQUESTS:,} requests")
    else:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        try:
            for row in reader:
                out.append(_trace_row(path, len(out) + 1, dict(row)))
                if len(out) > MAX_TRACE_REQUESTS:
                    raise BadInputError(f"{path}: more than {MAX_TRACE_REQUESTS:,} requests")
        except csv.Error as exc:
            raise BadInputError(f"{path}:{reader.line_num}: not CSV ({exc})") from None
    del text
    if not out:
        raise BadInputError(f"{path}: no requests")
    if len({r.arrival_step is None for r in out}) > 1:
        raise BadInputError(f"{path}: give every request an arrival (seconds) or every one an arrival_step, not both")
    out.sort(key=lambda r: (r.arrival_step or 0, r.arrival))
    return tuple(out)


def _number(path: str, n: int, row: dict[str, object], key: str, *, integer: bool, optional: bool = False) -> float:
    value = row.get(key)
    if value in (None, "") and optional:
        return -1.0
    try:
        if isinstance(value, str) and (not value.isascii() or "_" in value):
            raise ValueError
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise BadInputError(f"{path}: request {n}: {key} must be a number, not {value!r}") from None
    if not math.isfinite(x) or x < 0 or (integer and (x != int(x) or x < 1)) or x > 1e12:
        what = "a whole number ≥ 1" if integer else "a finite number ≥ 0"
        raise BadInputError(f"{path}: request {n}: {key} must be {what}, not {value!r}")
    return x


def _trace_row(path: str, n: int, row: dict[str, object]) -> RequestSpec:
    cancel = _number(path, n, row, "cancel_after", integer=False, optional=True)
    tokens = _number(path, n, row, "cancel_after_tokens", integer=True, optional=True)
    if row.get("arrival") in (None, "") and row.get("arrival_step") not in (None, ""):
        step = _number(path, n, row, "arrival_step", integer=False)
        cancel_step = _number(path, n, row, "cancel_step", integer=False, optional=True)
        if step != int(step) or (cancel_step >= 0 and cancel_step != int(cancel_step)):
            raise BadInputError(f"{path}: request {n}: arrival_step and cancel_step must be whole numbers")
        return RequestSpec(
            arrival=0.0,
            prompt=int(_number(path, n, row, "prompt_tokens", integer=True)),
            output=int(_number(path, n, row, "output_tokens", integer=True)),
            cancel_after_tokens=None if tokens < 0 else int(tokens),
            arrival_step=int(step),
            cancel_step=None if cancel_step < 0 else int(cancel_step),
        )
    return RequestSpec(
        arrival=_number(path, n, row, "arrival", integer=False),
        prompt=int(_number(path, n, row, "prompt_tokens", integer=True)),
        output=int(_number(path, n, row, "output_tokens", integer=True)),
        cancel_after=None if cancel < 0 else cancel,
        cancel_after_tokens=None if tokens < 0 else int(tokens),
    )


@dataclass
class IterationPlan:
    """A recorded workload by engine-loop iteration, as the recorders drive the engines: request i = (arrival
    iteration, prompt, output tokens, cancel iteration or None) is added, or aborted, before that iteration. A
    closed loop (``concurrency`` N) ignores the arrivals: the first N arrive at once, and each request that ends
    lets the next one arrive before the following iteration (``ended``)."""

    arrivals: dict[int, list[int]]
    cancels: dict[int, list[int]]
    last: int  # the last arrival's iteration so far (-1: none)
    total: int = 0  # requests in the workload
    pending: int = 0  # a closed loop's next request (0: not a closed loop)

    @classmethod
    def of(cls, requests: Sequence[tuple[int, int, int, int | None]], concurrency: int | None = None) -> IterationPlan:
        arrivals: dict[int, list[int]] = {}
        cancels: dict[int, list[int]] = {}
        for i, (arrive, _, _, cancel) in enumerate(requests):
            arrivals.setdefault(arrive, []).append(i)
            if cancel is not None:
                cancels.setdefault(cancel, []).append(i)
        if concurrency:
            first = min(concurrency, len(requests))
            return cls({0: list(range(first))}, cancels, 0, len(requests), first)
        return cls(arrivals, cancels, max(arrivals, default=-1), len(requests))

    def ended(self, iteration: int, count: int) -> None:
        """``count`` requests ended in ``iteration``: in a closed loop, as many clients send their next."""
        for _ in range(count):
            if not self.pending or self.pending >= self.total:
                return
            self.arrivals.setdefault(iteration + 1, []).append(self.pending)
            self.pending += 1
            self.last = iteration + 1
