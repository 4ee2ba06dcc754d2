"""An SGLang startup log accounted for figure by figure (`kvplan explain` on an SGLang log): the settings the log
states re-planned with kvplan's port of SGLang 0.5.23's pool sizing (kvplan/runtimes/engines/sglang.py), and the
pool figures SGLang prints side by side with kvplan's, each with the rule that produced it.

SGLang prints the pool's tokens exactly and its sizes and free memory to 0.01 GB (2^30 B). So the sizes are checked
from the logged tokens (a pool of N tokens holds N + page_size rows of each layer's K and V), the token count from
the free memory the log prints before and after the weights (every count the two rounded figures allow), and the
counts that follow from the tokens (the SWA pool, max_running_requests, the context) exactly."""

from __future__ import annotations

from dataclasses import dataclass, replace

from kvplan.analysis.explain_vllm import GpuFacts, log_share
from kvplan.analysis.figure import Figure
from kvplan.errors import BadInputError, KvplanError
from kvplan.model import ModelDescription
from kvplan.runtimes.engines import SGLANG, Capacity, EngineLayout, EngineSettings, layout
from kvplan.runtimes.engines.sglang import MAMBA_FULL_MEMORY_RATIO, SWA_FULL_TOKENS_RATIO, model_mem_fraction
from kvplan.sources.sglang_log import SglangLog

GB = 1 << 30
#: half the last printed digit: a figure SGLang prints as X.XX GB lies within this of X.XX
HALF_CENT = 0.005


@dataclass(frozen=True)
class SglangChange:
    """A flag change an SGLang user makes, and kvplan's plan of it on the log's free memory."""

    flags: str
    tokens: int
    max_running_requests: int | None


@dataclass(frozen=True)
class SglangExplanation:
    log: SglangLog
    settings: EngineSettings
    gpu: str
    figures: tuple[Figure, ...]
    notes: tuple[str, ...]
    mem_fraction_static: float
    context_len: int
    page_size: int
    token_bytes: int  # a token's bytes in the full pool on one GPU (K and V of every full layer)
    tokens: int | None = None  # kvplan's token pool from the log's free memory
    changes: tuple[SglangChange, ...] = ()

    @property
    def explained(self) -> bool:
        return all(f.equal for f in self.figures)


def _int(value: str | None, what: str) -> int | None:
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        raise BadInputError(f"the log's {what} is {value!r}, not a whole number") from None
    if not 0 < number <= 1 << 40:
        raise BadInputError(f"the log's {what} is {value}; expected a positive number")
    return number


def _chunk(value: str | None) -> int | None:
    """chunked_prefill_size as the log states it: -1 (or any number below 1) is chunked prefill off."""
    if value is not None and value.lstrip("-").isdigit() and int(value) <= 0:
        return -1
    return _int(value, "chunked_prefill_size")


def _gb(value: str | None, what: str) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        raise BadInputError(f"the log's {what} is {value!r}, not a number") from None
    if not 0 <= number < 1 << 30:
        raise BadInputError(f"the log's {what} is {value} GB; expected a GPU's memory")
    return number


def settings_of(log: SglangLog, gpu: GpuFacts) -> EngineSettings:
    """The KV-relevant server arguments the log states, as SGLang resolves them for the GPU."""
    share = log_share(log.setting("mem_fraction_static"), "mem_fraction_static")
    radix = log.setting("disable_radix_cache")
    dtype = (log.setting("kv_cache_dtype") or "auto").lower()
    s = EngineSettings(
        kv_cache_dtype="auto" if dtype in ("bf16", "bfloat16") else dtype,
        tensor_parallel_size=_int(log.setting("tp_size"), "tp_size") or 1,
        pipeline_parallel_size=_int(log.setting("pp_size"), "pp_size") or 1,
        block_size=_int(log.setting("page_size"), "page_size"),
        max_model_len=_int(log.setting("context_length"), "context_length"),
        mem_fraction_static=share,
        max_total_tokens=_int(log.setting("max_total_tokens"), "max_total_tokens"),
        swa_full_tokens_ratio=log_share(log.setting("swa_full_tokens_ratio"), "swa_full_tokens_ratio", ""),
        max_num_seqs=_int(log.setting("max_running_requests"), "max_running_requests"),
        max_mamba_cache_size=_int(log.setting("max_mamba_cache_size"), "max_mamba_cache_size"),
        chunked_prefill_size=_chunk(log.setting("chunked_prefill_size")),
        max_prefill_tokens=_int(log.setting("max_prefill_tokens"), "max_prefill_tokens"),
        disable_overlap_schedule=log.setting("disable_overlap_schedule") == "True",
        enable_prefix_caching=False if radix == "True" else None,
        capability=gpu.capability,
        gpu_name=gpu.name,
    )
    return SGLANG.resolve(s, gpu.memory_bytes, gpu.name)


def _gib(n: float) -> str:
    return f"{n / GB:.2f}"


def _pool_bytes(lay: EngineLayout, model: ModelDescription, swa: bool) -> tuple[int, int]:
    """One token's (K, V) bytes on one GPU in the full pool (``swa`` False) or the SWA pool; MLA: (latent, 0)."""
    stage = lay.stages[0]
    k = v = 0
    for ref in stage:
        spec = lay.specs[ref]
        if spec.kind == "state" or (not spec.full_type) != swa:
            continue
        if spec.mla_type:
            k += spec.token_bytes
            continue
        layer = model.layers[ref.layer]
        share = layer.head_k / (layer.head_k + layer.head_v) if layer.head_k + layer.head_v else 0.5
        k_part = round(spec.token_bytes * share)
        k, v = k + k_part, v + spec.token_bytes - k_part
    return k, v


def _size_figures(log: SglangLog, lay: EngineLayout, model: ModelDescription, s: EngineSettings) -> list[Figure]:
    """Each pool's printed sizes from its printed tokens: (tokens + page) rows of every layer's K and V."""
    page = lay.block_tokens
    out: list[Figure] = []
    for pool in log.pools:
        swa = pool.label.upper() == "SWA"
        k, v = _pool_bytes(lay, model, swa)
        rows = pool.tokens + page
        name = f"{pool.label} KV pool" if pool.label else "KV pool"
        where = (f"{pool.tokens:,} tokens + a page of {page} (SGLang's padding rows) × {{}} B per token "
                 f"on one GPU ({s.kv_cache_dtype} cache, tp {s.tensor_parallel_size})")  # fmt: skip
        if pool.kv_gb is not None:  # MLA: one latent buffer (DSA: its indexer keys too)
            out.append(_gb_figure(f"{name}: KV size, GB", pool.kv_gb, rows, k + v, where.format(f"{k + v:,}")))
            continue
        for what, logged, per_token in (("K", pool.k_gb, k), ("V", pool.v_gb, v)):
            if logged is not None:
                out.append(_gb_figure(f"{name}: {what} size, GB", logged, rows, per_token,
                                      where.format(f"{per_token:,}")))  # fmt: skip
    return out


def _gb_figure(what: str, logged: str, rows: int, per_token: int, why: str) -> Figure:
    """A pool size as printed against kvplan's rows × bytes a token; where they differ, what the printed figure
    means a token costs."""
    mine = _gib(rows * per_token)
    if logged == mine:
        return Figure(what, logged, mine, True, why, rows * per_token)
    low, high = (float(logged) - HALF_CENT) * GB / rows, (float(logged) + HALF_CENT) * GB / rows
    said = f"; the log's {logged} GB is {low:,.0f}–{high:,.0f} B a token"
    return Figure(what, logged, mine, False, f"not explained: kvplan's {why}{said}", rows * per_token)


def explain_sglang(log: SglangLog, model: ModelDescription, gpu: GpuFacts, gpu_assumed: bool) -> SglangExplanation:
    """The log's pool figures against kvplan's plan of the settings it states on ``gpu``."""
    s = settings_of(log, gpu)
    notes = ["kvplan follows SGLang 0.5.23's rules; the log does not print its version"]
    try:
        lay = layout(model, SGLANG, s)
        context = s.max_model_len or SGLANG.default_max_len(model)
    except KvplanError as exc:
        raise BadInputError(f"kvplan cannot plan this log's settings for SGLang: {exc}") from None
    mfs = model_mem_fraction(model, s, gpu.memory_bytes)
    if s.mem_fraction_static is None:
        notes.append(f"the log does not state mem_fraction_static: SGLang's default for {gpu.name} is {mfs}")
    if gpu_assumed:
        notes.append(f"the log does not name its GPU: planned for {gpu.name} (pass --gpu); the GPU picks the page "
                     "size on Blackwell and the default mem_fraction_static")  # fmt: skip
    page = lay.block_tokens
    figures = _size_figures(log, lay, model, s)
    logged_tokens = log.max_total_tokens if log.max_total_tokens is not None else _full_pool_tokens(log)
    pre, avail = _gb(log.load_begin_gb, "free memory before the weights"), _gb(log.load_end_gb, "free memory")
    tokens: int | None = None
    if pre is not None and avail is not None:
        cap = SGLANG.capacity_from_free(model, s, lay, pre, avail, mfs)
        tokens = cap.tokens
        ranges = _reachable(model, s, lay, pre, avail, mfs)
        if logged_tokens is not None:
            figures.append(_tokens_figure(pre, avail, mfs, logged_tokens, cap, ranges))
        if log.mamba_slots is not None:
            figures.append(_slots_figure(log.mamba_slots, cap, ranges))
    if logged_tokens is not None:
        figures += _count_figures(log, lay, s, logged_tokens, context, page)
    if not figures:
        raise BadInputError("the SGLang log prints no KV pool figure (KV Cache is allocated, max_total_num_tokens)")
    full_k, full_v = _pool_bytes(lay, model, False)
    changes = _changes(model, s, lay, pre, avail, mfs) if pre is not None and avail is not None else ()
    return SglangExplanation(log, s, gpu.name, tuple(figures), tuple(notes), mfs, context, page, full_k + full_v,
                             tokens, changes)  # fmt: skip


def _full_pool_tokens(log: SglangLog) -> int | None:
    full = [p for p in log.pools if p.label.upper() != "SWA"]
    return full[0].tokens if full else None


def _reachable(model: ModelDescription, s: EngineSettings, lay: EngineLayout, pre: float, avail: float,
               mfs: float) -> list[tuple[int, int, int]]:  # fmt: skip
    """(state slots, fewest tokens, most tokens) the free memory allows where SGLang's two printed figures lie
    within 0.005 GB of what it measured. With a state pool the tokens are not monotonic in the memory (a whole
    slot more leaves fewer tokens), so the range is walked slot count by slot count; within one the tokens grow
    with the memory. Where the slots are small (more than 16 counts in the range) one slot's drop is less than a
    count's rise, so the counts overlap: the first and the last step bound them."""
    spread = HALF_CENT * (2 - mfs)  # the pools' memory moves with the free memory after, and (1 − mfs) × before

    def at(x: float) -> Capacity:
        return SGLANG.capacity_from_free(model, s, lay, pre, avail + x, mfs)

    lo, hi = at(-spread), at(spread)

    def first_with(slots: int) -> float:  # the least memory with at least this many slots
        a, b = -spread, spread
        for _ in range(60):
            a, b = (a, (a + b) / 2) if at((a + b) / 2).state_slots >= slots else ((a + b) / 2, b)
        return b

    def last_with(slots: int) -> float:  # the most memory with at most this many slots
        a, b = -spread, spread
        for _ in range(60):
            a, b = ((a + b) / 2, b) if at((a + b) / 2).state_slots <= slots else (a, (a + b) / 2)
        return a

    if hi.state_slots - lo.state_slots > 16:  # small slots: the pieces overlap, and the ends bound them all
        least = min(lo.tokens, at(first_with(lo.state_slots + 1)).tokens)
        most = max(hi.tokens, at(last_with(hi.state_slots - 1)).tokens)
        return [(lo.state_slots, least, most), (hi.state_slots, least, most)]
    out: list[tuple[int, int, int]] = []
    for slots in range(lo.state_slots, hi.state_slots + 1):
        first = first_with(slots) if slots > lo.state_slots else -spread
        last = last_with(slots) if slots < hi.state_slots else spread
        out.append((slots, at(first).tokens, at(last).tokens))
    return out


def _tokens_figure(pre: float, avail: float, mfs: float, logged: int, cap: Capacity,
                   ranges: list[tuple[int, int, int]]) -> Figure:  # fmt: skip
    """The token pool from the free memory: every count the two rounded figures allow."""
    equal = any(low <= logged <= high for _, low, high in ranges)
    rest = avail - pre * (1 - mfs)
    per_token = cap.basis.split("; ÷ ", 1)[-1]
    spans = ", ".join(f"{low:,}–{high:,}" for _, low, high in ranges)
    why = (f"free after the weights {avail:.2f} GB − free before them {pre:.2f} GB × (1 − mem_fraction_static {mfs}) "
           f"= {rest:.2f} GB for the pools; ÷ {per_token} → {spans} tokens at the log's 0.01 GB")  # fmt: skip
    return Figure("max_total_num_tokens (from the free memory)", f"{logged:,}", f"{cap.tokens:,}", equal,
                  why if equal else f"not explained: {why}")  # fmt: skip


def _slots_figure(logged: int, cap: Capacity, ranges: list[tuple[int, int, int]]) -> Figure:
    """The state pool's slots from the free memory, as the tokens are."""
    low, high = ranges[0][0], ranges[-1][0]
    equal = low <= logged <= high
    why = (f"the state pool's share of the pools' memory (mamba_full_memory_ratio {MAMBA_FULL_MEMORY_RATIO}), in "
           f"whole slots of {cap.state_pool_bytes // max(1, cap.state_slots + 1):,} B → {low:,}–{high:,} at the "
           "log's 0.01 GB")  # fmt: skip
    return Figure("max_mamba_cache_size", f"{logged:,}", f"{cap.state_slots:,}", equal,
                  why if equal else f"not explained: {why}")  # fmt: skip


def _count_figures(
    log: SglangLog, lay: EngineLayout, s: EngineSettings, tokens: int, context: int, page: int
) -> list[Figure]:
    """What follows from the token pool exactly: the SWA pool, the context, max_running_requests."""
    out: list[Figure] = []
    if log.swa_tokens is not None:
        ratio = s.swa_full_tokens_ratio or SWA_FULL_TOKENS_RATIO
        mine = int(tokens * ratio) // page * page
        why = f"{tokens:,} full tokens × swa_full_tokens_ratio {ratio}, in pages of {page}"
        equal = mine == log.swa_tokens
        out.append(Figure("swa_layer_tokens", f"{log.swa_tokens:,}", f"{mine:,}", equal,
                          why if equal else f"not explained: {why}"))  # fmt: skip
    if log.context_len is not None:
        why = ("the --context-length the run was given" if s.max_model_len
               else "the model's own context, as SGLang's ModelConfig derives it from config.json")  # fmt: skip
        equal = log.context_len == context
        out.append(Figure("context_len", f"{log.context_len:,}", f"{context:,}", equal,
                          why if equal else "not explained"))  # fmt: skip
    if log.max_running_requests is not None:
        slots = log.mamba_slots or 0
        per_request = SGLANG.state_slots_per_request(lay)
        mine = SGLANG.max_running_requests(tokens, context, s.max_num_seqs, slots, per_request)
        basis = (f"the --max-running-requests given ({s.max_num_seqs})" if s.max_num_seqs
                 else f"{tokens:,} tokens ÷ {context:,} × 512, between 2,048 and 4,096")  # fmt: skip
        why = f"{basis}; at most half the tokens ({tokens // 2:,})"
        if slots:
            why += f"; at most the {slots:,} state slots ÷ {per_request} a request holds"
        out.append(Figure("max_running_requests", f"{log.max_running_requests:,}", f"{mine:,}",
                          mine == log.max_running_requests, why if mine == log.max_running_requests
                          else f"not explained: {why}"))  # fmt: skip
    return out


def _changes(model: ModelDescription, s: EngineSettings, lay: EngineLayout, pre: float, avail: float,
             mfs: float) -> tuple[SglangChange, ...]:  # fmt: skip
    """The flags that change the token pool, each planned on the log's free memory."""
    candidates: list[tuple[str, EngineSettings, float]] = []
    if s.kv_cache_dtype == "auto":
        candidates.append(("--kv-cache-dtype fp8_e4m3", replace(s, kv_cache_dtype="fp8_e4m3"), mfs))
    if mfs <= 0.94:
        more = round(mfs + 0.05, 3)
        candidates.append((f"--mem-fraction-static {more:g}", replace(s, mem_fraction_static=more), more))
    out: list[SglangChange] = []
    for flags, changed, share in candidates:
        try:
            cap = SGLANG.capacity_from_free(model, changed, layout(model, SGLANG, changed), pre, avail, share)
        except KvplanError:
            continue
        out.append(SglangChange(flags, cap.tokens, cap.max_requests))
    return tuple(out)
