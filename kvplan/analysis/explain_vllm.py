"""A vLLM startup log accounted for figure by figure (`kvplan explain` on a vLLM log): the settings the log states
re-planned with kvplan's port of vLLM's planner (kvplan/runtimes/engines/vllm), and the KV cache figures vLLM
prints — its token capacity, the blocks behind it, the maximum concurrency and the context it is for — side by
side with kvplan's, each with the rule that produced it.

vLLM prints the memory it gives the KV cache rounded to 0.01 GiB, and the tokens and blocks exactly. So kvplan
finds the blocks that give the logged tokens (vLLM 0.33's ``get_kv_cache_capacity``: blocks ÷ the blocks one
request of max_model_len takes × max_model_len), checks that the printed memory holds exactly that many blocks of
the page kvplan computes, and then compares every other figure at the log's precision."""

from __future__ import annotations

from dataclasses import dataclass, replace

from kvplan.analysis.figure import Figure
from kvplan.errors import BadInputError, KvplanError
from kvplan.model import ModelDescription
from kvplan.runtimes.engines import VLLM, Capacity, EngineSettings
from kvplan.runtimes.engines.paged import RankMemory
from kvplan.sources.vllm_log import VllmLog

GIB = 1 << 30


@dataclass(frozen=True)
class GpuFacts:
    """The GPU a vLLM log is re-planned for: vLLM picks its attention backend (hence the block size) and its batch
    defaults by it."""

    name: str
    memory_bytes: int
    capability: tuple[int, int] | None


@dataclass(frozen=True)
class VllmChange:
    """A flag change a vLLM user makes, and kvplan's plan of it on the log's KV memory."""

    flags: str
    tokens: int
    concurrency: float


@dataclass(frozen=True)
class VllmExplanation:
    log: VllmLog
    settings: EngineSettings
    gpu: str
    figures: tuple[Figure, ...]
    notes: tuple[str, ...]
    blocks: int | None = None  # the block ids vLLM's figures come from
    block_bytes: int = 0  # a block id's bytes on one GPU
    budget_bytes: int | None = None  # the KV memory kvplan plans with (the log's, to the byte where it can tell)
    tokens: int | None = None  # kvplan's KV tokens for those blocks
    changes: tuple[VllmChange, ...] = ()
    max_model_len: int = 0  # the context the run serves: the one given, or the model's own as vLLM derives it

    @property
    def explained(self) -> bool:
        return all(f.equal for f in self.figures)


def _int(value: str | None, what: str) -> int | None:
    """A positive whole setting as the log states it; None where it states none (or vLLM's -1, auto)."""
    if value is None or value in ("None", "auto", "", "-1"):
        return None
    try:
        number = int(float(value))
    except (ValueError, OverflowError):
        raise BadInputError(f"the log's {what} is {value!r}, not a number") from None
    if not 0 < number <= 1 << 40:
        raise BadInputError(f"the log's {what} is {value}; expected a positive number")
    return number


def log_share(value: str | None, what: str, of: str = "of the GPU ") -> float | None:
    """A share a log states (gpu_memory_utilization, mem_fraction_static, ...), in (0, 1]; None where unstated."""
    if value is None or value in ("None", ""):
        return None
    try:
        share = float(value)
    except ValueError:
        raise BadInputError(f"the log's {what} is {value!r}, not a number") from None
    if not 0 < share <= 1:
        raise BadInputError(f"the log's {what} is {value}; expected a share {of}in (0, 1]")
    return share


def settings_of(log: VllmLog, gpu: GpuFacts) -> EngineSettings:
    """The KV-relevant settings the log states, resolved as `vllm serve` resolves them for the GPU."""
    dtype = (log.setting("kv_cache_dtype") or "auto").lower()
    prefix = log.setting("enable_prefix_caching")
    util = log.setting("gpu_memory_utilization") or log.utilization
    s = EngineSettings(
        kv_cache_dtype=dtype,
        tensor_parallel_size=_int(log.setting("tensor_parallel_size"), "tensor_parallel_size") or 1,
        pipeline_parallel_size=_int(log.setting("pipeline_parallel_size"), "pipeline_parallel_size") or 1,
        block_size=_int(log.setting("block_size"), "block_size"),
        max_model_len=_int(log.setting("max_model_len"), "max_model_len"),
        gpu_memory_utilization=log_share(util, "gpu_memory_utilization"),
        max_num_batched_tokens=_int(log.setting("max_num_batched_tokens"), "max_num_batched_tokens"),
        max_num_seqs=_int(log.setting("max_num_seqs"), "max_num_seqs"),
        enable_prefix_caching=None if prefix is None else prefix == "True",
        disable_hybrid_kv_cache_manager=log.setting("disable_hybrid_kv_cache_manager") == "True",
        mamba_ssm_cache_dtype=log.setting("mamba_ssm_cache_dtype"),
        capability=gpu.capability,
        gpu_name=gpu.name,
    )
    return VLLM.resolve(s, gpu.memory_bytes, gpu.name)


def _capacity(model: ModelDescription, s: EngineSettings, gpu: GpuFacts, budget: int) -> Capacity:
    s = replace(s, kv_cache_memory_bytes=budget)
    return VLLM.capacity(model, s, VLLM.build_layout(model, s), RankMemory(gpu.memory_bytes, 0, 0))


def _blocks_for_tokens(model: ModelDescription, s: EngineSettings, gpu: GpuFacts, tokens: int, bb: int) -> int | None:
    """The block ids whose capacity vLLM prints as ``tokens`` (the capacity grows with the blocks), or None."""
    lo, hi = 0, max(1, tokens)
    while lo < hi:  # the fewest blocks with at least that capacity
        mid = (lo + hi) // 2
        if _capacity(model, s, gpu, mid * bb).tokens >= tokens:
            hi = mid
        else:
            lo = mid + 1
    return lo if _capacity(model, s, gpu, lo * bb).tokens == tokens else None


def explain_vllm(log: VllmLog, model: ModelDescription, gpu: GpuFacts, gpu_assumed: bool) -> VllmExplanation:
    """The log's KV figures against kvplan's plan of the settings it states on ``gpu``."""
    s = settings_of(log, gpu)
    notes: list[str] = []
    if log.version and not log.version.startswith("0.33"):
        notes.append(f"the log is vLLM {log.version}'s; kvplan follows vLLM 0.33's rules")
    if gpu_assumed:
        notes.append(f"the log does not name its GPU: planned for {gpu.name} (pass --gpu); the GPU picks the "
                     "attention backend, hence the block size")  # fmt: skip
    try:
        probe = _capacity(model, s, gpu, GIB)
    except KvplanError as exc:
        raise BadInputError(f"kvplan cannot plan this log's settings for vLLM: {exc}") from None
    bb = probe.layout.block_bytes
    figures: list[Figure] = []
    max_len = probe.max_model_len
    if log.concurrency_len is not None:
        equal = log.concurrency_len == max_len
        figures.append(Figure("max_model_len (the concurrency's request length)", f"{log.concurrency_len:,}",
                              f"{max_len:,}", equal, _len_why(log) if equal else "not explained"))  # fmt: skip
    blocks = _blocks(log, model, s, gpu, bb, figures)
    if blocks is not None:
        figures += _block_figures(log, model, s, gpu, blocks, bb)
    refused_budget = None
    if log.needed_gib is not None:
        refused, refused_budget = _refusal_figures(log, probe, bb)
        figures += refused
    if not figures:
        raise BadInputError("the vLLM log prints no KV cache figure (GPU KV cache size, # GPU blocks)")
    budget = blocks * bb if blocks is not None else refused_budget or _available(log)
    changes = _changes(model, s, gpu, budget, log) if budget else ()
    tokens = _capacity(model, s, gpu, budget).tokens if budget else None
    return VllmExplanation(log, s, gpu.name, tuple(figures), tuple(notes), blocks, bb, budget, tokens, changes, max_len)


def _gib_printed(shown: str) -> tuple[int, int]:
    """The bytes that vLLM prints as ``shown`` GiB (two decimals): [low, high)."""
    value = float(shown)
    return max(0, int((value - 0.005) * GIB)), int((value + 0.005) * GIB)


def _refusal_figures(log: VllmLog, cap: Capacity, bb: int) -> tuple[list[Figure], int | None]:
    """V1's refusal (vLLM check_enough_kv_cache_memory): the KV memory one request of the max seq len needs — each
    KV layer's max_memory_usage_bytes summed, which is the blocks one request holds × a block id's bytes — against
    the memory it had, and vLLM's estimate of the longest context that fits (estimate_max_model_len: the largest
    length whose need is within that memory, found by bisection). vLLM prints both memories rounded to 0.01 GiB,
    so the estimate is checked against every memory that prints as the log's. Also the KV memory kvplan re-plans
    the log with: the least for which vLLM's estimate is the log's (need(M) + the block the pool holds back), else
    the memory the refusal prints plus that block; None where the refusal is not kvplan's."""
    assert log.needed_gib is not None and log.refusal_available_gib is not None
    lay, n = cap.layout, log.refused_len or cap.max_model_len
    out: list[Figure] = []
    if n != cap.max_model_len:
        out.append(Figure("max seq len (the refusal's)", f"{n:,}", f"{cap.max_model_len:,}", False, "not explained"))
        return out, None

    def need(length: int) -> int:
        return lay.request_blocks(length) * lay.block_bytes

    needed = need(n)
    mine = round(needed / GIB, 2)
    equal = mine == float(log.needed_gib)
    why = (f"{lay.request_blocks(n):,} blocks one request of {n:,} tokens holds × {lay.block_bytes:,} B a block id "
           f"= {needed:,} B")  # fmt: skip
    out.append(Figure(f"KV cache one request of {n:,} tokens needs, GiB", log.needed_gib, f"{mine:.2f}", equal,
                      why if equal else f"not explained: kvplan's {why}", needed))  # fmt: skip

    def estimate(memory: int) -> int:  # vLLM estimate_max_model_len
        if need(1) > memory:
            return 0
        lo, hi = 1, n
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if need(mid) <= memory else (lo, mid - 1)
        return lo

    low, high = _gib_printed(log.refusal_available_gib)
    fewest, most = estimate(low), estimate(high - 1)
    got = log.estimated_len or 0
    shown = f"{fewest:,}" if fewest == most else f"{fewest:,}–{most:,}"
    equal = fewest <= got <= most
    why = (f"the longest context whose KV need is within the {log.refusal_available_gib} GiB the check had (vLLM 0.33: "
           f"the KV memory less the one block id its pool holds back, {bb:,} B)")  # fmt: skip
    if fewest != most:
        why += f"; {log.refusal_available_gib} GiB is any of {high - low:,} B, whose estimates run {shown}"
    out.append(Figure("estimated maximum model length", f"{got:,}" if log.estimated_len is not None else "-", shown,
                      equal, why if equal else f"not explained: {why}"))  # fmt: skip
    budget = need(got) + bb if equal and got else int(float(log.refusal_available_gib) * GIB) + bb
    return out, budget


def _page(s: EngineSettings, bs: int, bb: int) -> str:
    tp = s.tensor_parallel_size
    return (f"a block id holds {bs} tokens of every KV layer a GPU keeps: {bb:,} B ({s.kv_cache_dtype} cache, "
            f"{tp} GPU{'s' if tp > 1 else ''} of tensor parallelism)")  # fmt: skip


def _blocks(
    log: VllmLog, model: ModelDescription, s: EngineSettings, gpu: GpuFacts, bb: int, figures: list[Figure]
) -> int | None:
    """The block ids the log's figures come from: those giving its token count, its `# GPU blocks`, or V0's
    refusal's tokens ÷ the block size."""
    bs = _capacity(model, s, gpu, GIB).layout.block_tokens
    blocks: int | None = None
    if log.kv_tokens is not None:
        blocks = _blocks_for_tokens(model, s, gpu, log.kv_tokens, bb)
        if blocks is None:
            got = _capacity(model, s, gpu, _available(log) or GIB).tokens
            figures.append(Figure("GPU KV cache size, tokens", f"{log.kv_tokens:,}", f"{got:,}", False,
                                  f"not explained: no whole number of {bb:,} B blocks gives {log.kv_tokens:,} tokens "
                                  f"({_page(s, bs, bb)})"))  # fmt: skip
    elif log.gpu_blocks is not None:
        blocks = log.gpu_blocks
    elif log.stored_tokens is not None and log.stored_tokens % bs == 0:  # V0: blocks × block size
        blocks = log.stored_tokens // bs
    if log.stored_tokens is not None:
        held = blocks * bs if blocks is not None else None
        equal = held == log.stored_tokens and log.refused_len is not None
        why = "not explained"
        if equal and held is not None and log.refused_len:
            why = (f"{held // bs:,} blocks × {bs} tokens, fewer than the {log.refused_len:,} one request of the max "
                   "seq len needs: vLLM refused to start")  # fmt: skip
        figures.append(Figure("tokens the KV cache stores (V0's refusal)", f"{log.stored_tokens:,}",
                              f"{held:,}" if held is not None else "-", equal, why))  # fmt: skip
    return blocks


def _block_figures(
    log: VllmLog, model: ModelDescription, s: EngineSettings, gpu: GpuFacts, blocks: int, bb: int
) -> list[Figure]:
    """The figures that follow from the blocks: the tokens, the blocks, the memory that holds them, the
    concurrency."""
    cap = _capacity(model, s, gpu, blocks * bb)
    bs, max_len = cap.layout.block_tokens, cap.max_model_len
    page = _page(s, bs, bb)
    out: list[Figure] = []
    if log.kv_tokens is not None:
        out.append(Figure("GPU KV cache size, tokens", f"{log.kv_tokens:,}", f"{cap.tokens:,}", True,
                          f"{blocks:,} blocks: {cap.concurrency:.4f} requests of {max_len:,} tokens × {max_len:,}; "
                          f"{page}"))  # fmt: skip
    if log.gpu_blocks is not None:
        out.append(Figure("GPU blocks", f"{log.gpu_blocks:,}", f"{blocks:,}", True, page))
    if log.available_gib is not None:
        out.append(_memory_figure(log, s, blocks, bb))
    if log.concurrency is not None:
        mine = f"{cap.concurrency:.2f}"
        why = (f"{blocks:,} blocks ÷ {cap.layout.request_blocks(max_len):,} blocks a request of {max_len:,} tokens "
               "takes")  # fmt: skip
        equal = mine == log.concurrency
        out.append(Figure(f"Maximum concurrency for {max_len:,} tokens per request", f"{log.concurrency}x",
                          f"{mine}x", equal, why if equal else "not explained"))  # fmt: skip
    return out


def _memory_figure(log: VllmLog, s: EngineSettings, blocks: int, bb: int) -> Figure:
    """The printed KV memory against the memory that holds exactly the blocks (vLLM rounds it to 0.01 GiB)."""
    assert log.available_gib is not None
    low, high = blocks * bb, (blocks + 1) * bb
    shown = float(log.available_gib)
    fits = low < (shown + 0.005) * GIB and high > (shown - 0.005) * GIB
    why = (f"{blocks:,} blocks of {bb:,} B: any KV memory from {low / GIB:.4f} to {high / GIB:.4f} GiB holds "
           f"exactly these, printed as {log.available_gib}")  # fmt: skip
    ranks = s.tensor_parallel_size * s.pipeline_parallel_size
    if not fits and ranks > 1 and low < (shown + 0.005) * GIB:
        # get_kv_cache_configs (vllm/v1/core/kv_cache_planning.py), step 5: every worker takes the smallest
        # num_blocks of all; the log prints this GPU's memory, which holds more
        fits = True
        why = (f"{blocks:,} blocks of {bb:,} B take {low / GIB:.4f}–{high / GIB:.4f} GiB, less than this GPU's "
               f"{log.available_gib}: vLLM gives each of the {ranks} GPUs the smallest block count any of them holds "
               f"(get_kv_cache_configs), so another GPU had {low / GIB:.4f}–{high / GIB:.4f} GiB for the KV cache "
               "(its line is not in the log)")  # fmt: skip
    elif not fits:
        why = f"not explained: {blocks:,} blocks take {low / GIB:.4f}–{high / GIB:.4f} GiB"
        if ranks > 1:
            why += "; vLLM gives every GPU the smallest count any GPU holds, and the log prints one GPU's memory"
    return Figure("Available KV cache memory, GiB", log.available_gib, f"{low / GIB:.2f}", fits, why, low)


def _available(log: VllmLog) -> int | None:
    return int(float(log.available_gib) * GIB) if log.available_gib else None


def _len_why(log: VllmLog) -> str:
    if log.setting("max_model_len"):
        return "the --max-model-len the run was given"
    return "the model's own context, as vLLM derives it from config.json"


def _changes(
    model: ModelDescription, s: EngineSettings, gpu: GpuFacts, budget: int, log: VllmLog
) -> tuple[VllmChange, ...]:
    """The flags that change the figure users want larger, each planned on the same KV memory per GPU."""
    out: list[VllmChange] = []
    candidates: list[tuple[str, EngineSettings, int]] = []
    if s.kv_cache_dtype == "auto":
        candidates.append(("--kv-cache-dtype fp8", replace(s, kv_cache_dtype="fp8"), budget))
    cap = _capacity(model, s, gpu, budget)
    max_len = cap.max_model_len
    if cap.concurrency < 1:  # vLLM refuses to start: the longest context one request can have
        best = cap.max_context(1, max_len)
        if best > 0:
            candidates.append((f"--max-model-len {best} (the longest that fits)", replace(s, max_model_len=best),
                               budget))  # fmt: skip
    elif max_len >= 2048:
        candidates.append((f"--max-model-len {max_len // 2}", replace(s, max_model_len=max_len // 2), budget))
    if log.total_gib and s.gpu_memory_utilization and s.gpu_memory_utilization <= 0.94:
        util = round(s.gpu_memory_utilization + 0.05, 2)
        more = int(0.05 * float(log.total_gib) * GIB)
        candidates.append((f"--gpu-memory-utilization {util:g}", s, budget + more))
    for flags, changed, mem in candidates:
        try:
            cap = _capacity(model, changed, gpu, mem)
        except KvplanError:
            continue
        out.append(VllmChange(flags, cap.tokens, cap.concurrency))
    return tuple(out)


def engine_model_for(named: str, log_path: str, given: str | None) -> ModelDescription:
    """The model a serving engine's log is re-planned for: the one given, else the folder the log served from
    (``named``) where it is readable here, else the catalog entry whose Hugging Face id the log names (a local
    path's last part is tried as an id's name too)."""
    from kvplan.errors import UsageError
    from kvplan.sources import load_model
    from kvplan.sources.catalog import catalog_name, hf_ids

    if given:
        return load_model(given)
    if not named:
        raise UsageError(f"{log_path}: the log names no model; give the model with -m MODEL")
    import os

    if os.path.isdir(named) or os.path.isfile(named):  # a local folder vLLM served from, readable here
        return load_model(named)
    name = catalog_name(named)
    if name is None:  # a local folder named after its repository (…/Qwen3-8B): match the repository's name
        tail = named.rstrip("/").rsplit("/", 1)[-1].lower()
        matches = {n for hf, n in hf_ids().items() if hf.rsplit("/", 1)[-1] == tail}
        name = matches.pop() if len(matches) == 1 else None
    if name is None:
        raise UsageError(
            f"{log_path}: the log served {named!r}, which is not in the catalog; give its config.json folder, spec "
            "or catalog name with -m MODEL"
        )
    return load_model(name)
