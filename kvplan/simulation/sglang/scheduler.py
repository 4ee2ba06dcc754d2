"""SGLang 0.5.23's scheduler over one token pool, step by step.

Ported from sglang/srt/managers/scheduler.py (get_next_batch_to_run, _get_new_batch_prefill_raw with the mixed
chunk, update_running_batch, the two event loops), scheduler_components/batch_result_processor.py (a token for
every request whose prefill is complete, checkpoint_kv_cache, release_kv_cache), schedule_policy.py
(PrefillAdder: add_chunked_req, add_one_req, add_one_req_ignore_eos, _select_prefill_admission, budget_state;
SchedulePolicy.calc_priority: FCFS with the waiting-prefix refresh, LPM with in-batch prefix caching),
mem_cache/prefill_budget.py (PrefillBudget), schedule_batch.py (check_decode_mem, retract_decode and its order,
release_req), scheduler_components/new_token_ratio_tracker.py, and the radix cache (kvplan.simulation.sglang.radix).
Proven against SGLang's own scheduler driven step by step (scripts/engines/sglang_sched_case.py →
tests/fixtures/engines/sglang_sched*.json): every iteration of every recorded workload. What is ported: the token
pool (MHA or MLA alike: the pool counts tokens) in pages of any size, the radix cache on and off, FCFS and LPM,
chunked prefill and mixed chunks, the new-token ratio, retraction, refused prompts, both event loops; a hybrid
sliding-window model's SWA pool beside it (allocator/swa.py, maybe_evict_swa, SWAPrefillBudget); a Mamba hybrid's
state pool (memory_pool.py's HybridReqToTokenPool with the extra buffer's ping-pong slots or without,
ensure_mamba_capacity, the checkpoints of prepare_for_extend and of decode, MambaComponent's donation and copy on
write).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum

from kvplan.errors import RefusedConfigError
from kvplan.runtimes.engines.sglang import SWA_EVICTION_INTERVAL
from kvplan.simulation.sglang.radix import Node, RadixTree, Seq
from kvplan.simulation.workload import IterationPlan

#: SGLang's environment defaults (sglang/srt/environ.py)
INIT_NEW_TOKEN_RATIO = 0.7
MIN_NEW_TOKEN_RATIO_FACTOR = 0.14
NEW_TOKEN_RATIO_DECAY_STEPS = 600
RETRACT_DECODE_STEPS = 20
CLIP_MAX_NEW_TOKENS = 4096  # SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION
IGNORE_EOS_RESERVE_TOKENS = 1
WAITING_PREFIX_REFRESH_INTERVAL = 32
WAITING_QUEUE_PREFIX_MATCH_MAX = 128
IN_BATCH_PREFIX_CACHING_CHECK_THRESHOLD = 32
IN_BATCH_PREFIX_CACHING_DEPRIORITIZE_THRESHOLD = 32


@dataclass(frozen=True)
class SchedulerConfig:
    """What SGLang's scheduler is given: its pool and limits, resolved as SGLang resolves them."""

    max_total_num_tokens: int
    max_running_requests: int
    max_prefill_tokens: int
    chunked_prefill_size: int | None
    context_len: int
    page_size: int = 1
    schedule_conservativeness: float = 1.0
    radix_cache: bool = True  # --disable-radix-cache turns it off
    mixed_chunk: bool = False  # --enable-mixed-chunk (with chunked prefill): decode rows ride in prefill batches
    schedule_policy: str = "fcfs"  # --schedule-policy: fcfs, or lpm (longest cached prefix first)
    # a hybrid sliding-window model (gpt-oss, Gemma): the SWA pool's tokens and the window its KV keeps
    # (SGLang's swa_retain_window: the attention window, gpt-oss's 128 is 127 there); None: one pool
    swa_tokens: int | None = None
    sliding_window: int | None = None
    # a Mamba hybrid (Nemotron-H, Qwen3-Next, Falcon-H1): its state slots (the Mamba pool, --max-mamba-cache-size),
    # the grid a prefill checkpoint lands on (mamba_checkpoint_grid: the kernel's chunk and the page) and a decode
    # one (mamba_track_grid: and --mamba-track-interval); SGLang's extra buffer: each running request holds a slot
    # and two ping-pong checkpoint slots. None: no Mamba pool
    mamba_slots: int | None = None
    mamba_grid: int = 128
    mamba_track: int = 256
    mamba_chunk: int = 128  # mamba_cache_chunk_size: a branch point inside a prefill is checkpointed on it
    # the extra buffer's checkpoint (ping-pong) slots: SGLang's "auto" strategy takes them with the radix cache and
    # the overlap loop or pages above one token (False: no_buffer, a state copied at each checkpoint's end)
    mamba_extra_buffer: bool = True

    @property
    def max_req_len(self) -> int:
        """TpModelWorker.get_worker_info: the longest request (prompt and output)."""
        return min(self.context_len - 1, self.max_total_num_tokens - 1)

    @property
    def max_req_input_len(self) -> int:
        return self.max_req_len - 5


@dataclass(slots=True, eq=False)
class Req:
    rid: int
    prompt: int  # len(origin_input_ids)
    max_new: int  # sampling_params.max_new_tokens, clipped by init_req_max_new_tokens
    ignore_eos: bool = False
    output: int = 0  # len(output_ids)
    prefix_len: int = 0  # tokens whose KV the request already holds when a prefill round starts
    extend_end: int = 0  # tokens whose KV exists after this round
    kv: int = 0  # positions with KV (kv_allocated_len): the cached prefix, the chunks, the decoded tokens
    protected: int = 0  # of them, the prefix the radix tree holds for it (cache_protected_len)
    holds_slot: bool = False  # a req_to_token row
    seq: Seq | None = None  # its tokens, for the radix tree
    node: Node | None = None  # the tree node its lock holds (req.lock)
    last: Node | None = None  # the last node of its latest prefix match (req.last_node)
    finished: bool = False
    aborted: bool = False
    retracted: bool = False  # until re-admitted: a result still queued for it is dropped
    error: str | None = None  # SGLang refused it on arrival (it ends with its one-token prefill)
    # with an SWA pool: the positions below which its SWA KV is gone (component_evicted_seqlens[SWA]), where the
    # tree's full KV outruns its SWA KV on its last match (swa_branching_seqlen), where its window lock starts,
    # and its decode steps since its last prefill (decode_batch_idx)
    evicted: int = 0
    branch: int | None = None
    boundary: int | None = None
    decodes: int = 0
    extends: int = 0  # extend_batch_idx: its prefill rounds since its last retraction
    # with a Mamba pool: whether it holds its state slot (mamba_pool_idx) and its two ping-pong checkpoint slots,
    # the lengths its latest and previous checkpoints hold (mamba_last/prev_track_seqlen), and where the tree's
    # full KV outran its states on its last match (mamba_branching_seqlen)
    state: bool = False
    pingpong: bool = False
    track: int | None = None
    prev_track: int | None = None
    state_branch: int | None = None

    @property
    def fill(self) -> int:
        """len(full_untruncated_fill_ids): the prompt and the outputs so far."""
        return self.prompt + self.output

    @property
    def extend_len(self) -> int:
        return self.extend_end - self.prefix_len


#: the prompt SGLang gives a request it refuses on arrival: one token, id 0, the same for every such request
REFUSED = Seq(-1, 1, 0)


def paged(tokens: int, page: int) -> int:
    """Tokens rounded up to whole pages (ceil_paged_tokens)."""
    return -(-tokens // page) * page


def refusal(prompt: int, config: SchedulerConfig) -> str | None:
    """SGLang's refusal of a prompt too long for the pool or the context (validate_input_length,
    sglang/srt/managers/utils.py, with --allow-auto-truncate off), None when it is admitted."""
    limit = config.max_req_input_len
    if prompt >= limit:
        return (f"Input length ({prompt} tokens) exceeds the maximum allowed length ({limit} tokens). Use a "
                "shorter input or enable --allow-auto-truncate.")  # fmt: skip
    return None


class Add(Enum):
    CONTINUE = 0
    NO_TOKEN = 1
    OTHER = 2


@dataclass
class Batch:
    reqs: list[Req] = field(default_factory=list)
    extend: bool = False
    is_full: bool = False
    chunked: Req | None = None
    decoding: tuple[Req, ...] = ()  # a mixed batch's decode rows (a token each), after its prefills
    tracked: tuple[tuple[Req, int], ...] = ()  # decode rows whose step ends on a Mamba checkpoint, at that length
    prefill_only: bool = False  # is_prefill_only: every request asks no token (max_new_tokens 0 after clipping)
    sums: tuple[int, int] | None = None  # a decode batch's Σ context and rows past their prompt, from its allocation


@dataclass(slots=True)
class Launched:
    """A batch whose result is still to come: every row, the chunk that samples nothing, whether it was a prefill,
    a mixed batch's decode rows, and when it ended (the simulator's clock; 0 for the recorder's replay)."""

    rows: tuple[Req, ...]
    partial: Req | None
    prefill: bool
    decoding: tuple[Req, ...]
    end: float = 0.0
    tracked: tuple[tuple[Req, int], ...] = ()


@dataclass(frozen=True)
class StepRecord:
    """One iteration as the recorder writes it."""

    it: int
    extend: tuple[tuple[int, int], ...]
    decode: tuple[int, ...]
    running: int
    waiting: int
    retracted: int
    ratio: float
    free: int
    evictable: int
    full_free: int | None = None  # with an SWA pool, each pool's free tokens (free: the smaller)
    swa_free: int | None = None
    swa_evictable: int | None = None
    mamba_free: int | None = None  # with a Mamba pool, its free and evictable state slots
    mamba_evictable: int | None = None


class Pool:
    """The token pool and the request rows (TokenToKVPoolAllocator, ReqToTokenPool) — counts, not indices. With a
    sliding-window model, the full pool and the SWA pool beside it (SWATokenToKVPoolAllocator): an allocation
    takes from both, and what is available is the smaller."""

    def __init__(self, tokens: int, rows: int, swa: int | None = None, states: int | None = None) -> None:
        self.free = tokens  # the full pool's
        self.swa = swa
        self.rows = rows
        self.states = states  # the Mamba pool's free slots

    def available(self) -> int:
        return self.free if self.swa is None else min(self.free, self.swa)

    def alloc(self, n: int) -> None:
        assert n <= self.available(), "allocation past the pool"
        self.free -= n
        if self.swa is not None:
            self.swa -= n


class Scheduler:
    def __init__(self, config: SchedulerConfig, overlap: bool = True) -> None:
        self.c = config
        self.overlap = overlap  # event_loop_overlap (SGLang's default), or event_loop_normal
        self.pool = Pool(config.max_total_num_tokens, config.max_running_requests, config.swa_tokens,
                         config.mamba_slots)  # fmt: skip
        self.window = config.sliding_window if config.swa_tokens is not None else None
        self.mamba = config.mamba_slots is not None
        # get_mamba_tracking_slots: a request's checkpoint slots — two (ping-pong) with the overlap loop, one without
        self.tracking = (2 if overlap else 1) if config.mamba_extra_buffer else 0
        init = min(INIT_NEW_TOKEN_RATIO * config.schedule_conservativeness, 1.0)
        self.ratio_min = min(init * MIN_NEW_TOKEN_RATIO_FACTOR, 1.0)
        self.ratio_decay = (init - self.ratio_min) / NEW_TOKEN_RATIO_DECAY_STEPS
        self.ratio = init
        self.waiting: list[Req] = []
        self.running = Batch()
        self.last: Batch | None = None
        self.chunked: Req | None = None
        self.by_id: dict[int, Req] = {}
        self.queue: deque[Launched] = deque()  # the overlap loop's launched batch, its result not yet processed
        self.inflight: tuple[Req, ...] = ()  # that batch's requests
        self.retracted_reqs: list[Req] = []  # retracted since the caller last cleared it
        self.tree = RadixTree(config.page_size, self.window, self.mamba) if config.radix_cache else None
        self.refresh_calls = 0  # SchedulePolicy._waiting_prefix_refresh_calls
        self.ended = False  # a request finished since next_batch last filtered the running batch
        self.near: set[Req] = set()  # unfinished requests whose next output is their last by length
        self.sampled_rids: list[int] = []  # the requests the latest process() gave a token (not one refused)

    # -- requests in and out --
    def add(self, rid: int, prompt: int, output: int, ignore_eos: bool = False, shared_prefix: int = 0) -> Req:
        """handle_generate_request: init_req_max_new_tokens' clipping, then validate_input_length — a prompt of
        max_req_input_len tokens or more is aborted on arrival (set_finish_with_abort): it still goes through the
        queue, as one token (id 0), and ends with its prefill's result."""
        c = self.c
        max_new = max(0, min(output, c.max_req_len - prompt - 1))
        page = c.page_size
        max_new = max(0, min(max_new, c.max_total_num_tokens - paged(prompt, page) - page - 1))
        error = refusal(prompt, c)
        if error is not None:
            req = Req(rid, 1, max_new, ignore_eos, seq=REFUSED, aborted=True, error=error)
        else:
            req = Req(rid, prompt, max_new, ignore_eos, seq=Seq(rid, prompt, min(shared_prefix, prompt)))
        self.by_id[rid] = req
        self.waiting.append(req)
        if req.output + 1 >= req.max_new:
            self.near.add(req)
        return req

    def _decode_need(self, reqs: list[Req]) -> int:
        """new_tokens_required_next_decode: a page for every request whose last page is full."""
        page = self.c.page_size
        if page == 1:
            return len(reqs)  # every request starts a page of one
        return sum(1 for r in reqs if r.kv % page == 0) * page

    def _alloc_decode(self, reqs: list[Req]) -> tuple[tuple[tuple[Req, int], ...], tuple[int, int]]:
        """alloc_for_decode: with an SWA pool, first the KV that slid out of the window (maybe_evict_swa); evict
        for a page each (one token each with pages of one), then a page for every request that starts one. With a
        Mamba pool, the rows whose step ends on the decode checkpoint grid (their state is checkpointed there); and
        the batch's Σ context and decode rows (engine._sums)."""
        page = self.c.page_size
        window = self.window
        if window is not None:
            for r in reqs:  # a request's first decode step overlaps its prefill: not yet
                if r.decodes >= 1 and r.holds_slot and r.fill - 1 - window >= r.evicted + SWA_EVICTION_INTERVAL:
                    self._slide(r, r.fill - 1)
        pool = self.pool
        if len(reqs) * page > pool.free or pool.swa is not None or pool.states is not None:
            self._evict_to_free(len(reqs) * page)
        pool.alloc(self._decode_need(reqs))
        ctx = 0
        for r in reqs:
            kv = r.kv = r.kv + 1
            ctx += kv
        if window is not None:
            for r in reqs:
                r.decodes += 1
        sums = (ctx, len(reqs))  # Σ context, and every row is past its prompt: its prefill covered the prompt
        if not self.mamba:
            return (), sums
        track = self.c.mamba_track
        return tuple((r, r.kv) for r in reqs if r.kv % track == 0), sums

    def _slide(self, req: Req, pre_len: int) -> None:
        """free_swa_out_of_window_slots: the request's SWA KV more than a window behind ``pre_len``, above what the
        tree holds for it, goes back to the SWA pool."""
        window = self.window
        assert window is not None and self.pool.swa is not None
        if pre_len - window < req.evicted + 1:
            return
        page = self.c.page_size
        evicted = max(req.evicted, req.protected)
        req.evicted = evicted
        keep = window if self.tree is None else paged(max(window, page), page)
        new = max(evicted, pre_len - keep)
        new -= new % page
        if new > evicted:
            self.pool.swa += new - evicted
            req.evicted = new

    def _evict_to_free(self, tokens: int) -> None:
        """evict_to_free_tokens: evict the radix tree's least recently used leaves until ``tokens`` are free (with
        an SWA pool, in each pool)."""
        pool = self.pool
        if self.tree is None:
            return
        full = max(0, tokens - pool.free)
        swa = max(0, tokens - pool.swa) if pool.swa is not None else 0
        if full or swa:
            self._evict(full, swa, 0)

    def _evict(self, full: int, swa: int, states: int) -> None:
        """evict_for_alloc over every pool the tree holds KV or states of."""
        tree, pool = self.tree, self.pool
        assert tree is not None
        got_full, got_swa, got_states = tree.evict_for(full, swa, states)
        pool.free += got_full
        if pool.swa is not None:
            pool.swa += got_swa
        if pool.states is not None:
            pool.states += got_states

    def _take_state(self) -> None:
        """A Mamba slot (mamba_allocator.alloc(1)), the tree's least recent state evicted for it if none is free."""
        assert self.pool.states is not None
        if self.pool.states < 1 and self.tree is not None:
            self._evict(0, 0, 1)
        if self.pool.states < 1:  # SGLang stops there (an assertion): the workload cannot go on
            raise RefusedConfigError(
                "SGLang's Mamba pool has no slot left for a request's state ('Can not alloc mamba cache'); give "
                "a larger --max-mamba-cache-size pool (more GPU memory) or a lower --max-running-requests"
            )
        self.pool.states -= 1

    def _free_states(self, req: Req, keep: bool = False) -> None:
        """free_mamba_cache: the request's state slot and its ping-pong slots back to the Mamba pool, but the one
        the tree keeps (``keep``)."""
        pool = self.pool
        assert pool.states is not None
        pool.states += req.state + self.tracking * req.pingpong - (1 if keep else 0)
        req.state = req.pingpong = False
        req.track = req.prev_track = None

    def _checkpoint(self, req: Req, up_to: int, finished: bool = False) -> None:
        """checkpoint_into_tree: insert the request's tokens up to ``up_to`` (then, past the prompt, its prompt
        again), and move its lock onto the node the insert ended on. With an SWA pool: up to the branch point of
        its last match when that lies ahead, a running request's SWA KV out of the window freed first, and no
        second insert of the prompt. With a Mamba pool: up to the request's state checkpoint (_state_end)."""
        tree = self.tree
        assert tree is not None and req.seq is not None
        if up_to <= 0:
            return
        if self.mamba:
            end = self._state_end(req, up_to, finished)
            if end is None:
                return
            up_to = end
        page = self.c.page_size
        branch = self._window_end(req, up_to, finished) if self.window is not None else None
        if branch is not None:
            up_to = branch
        aligned = up_to - up_to % page
        node = tree.insert(req.seq, aligned, req.protected, req.evicted)
        self.pool.free += tree.freed
        if self.pool.swa is not None:
            self.pool.swa += tree.freed_swa
        elif not self.mamba:
            self._insert_prompt(req, aligned)
        if req.node is not None:
            tree.unlock(req.node, req.boundary)
        req.boundary = tree.lock(node)
        req.node = node
        req.protected = aligned
        if self.mamba:  # cleanup_after_caching_req: a state the node already held makes the donated one spare
            if finished:
                self._free_states(req, keep=not tree.state_existed)
            else:
                assert self.pool.states is not None
                self.pool.states += tree.state_existed
                req.track = req.prev_track = None
        if branch is not None and aligned >= branch:  # cleanup_after_caching_req: the branch is in the tree
            req.branch = None
            if not finished:
                self._slide(req, req.extend_end - 1)

    def _insert_prompt(self, req: Req, aligned: int) -> None:
        """The leaf split at the prompt, so eviction can drop the outputs without it (a tree of the full component
        alone)."""
        assert self.tree is not None and req.seq is not None
        page = self.c.page_size
        prompt = req.prompt - req.prompt % page
        if 0 < prompt < aligned:
            self.tree.insert(req.seq, prompt, prompt)
            self.pool.free += self.tree.freed

    def _window_end(self, req: Req, up_to: int, finished: bool) -> int | None:
        """SWAComponent.prepare_for_caching_req: the branch point of the request's last match when it lies ahead
        (the insert stops there), and a running request's SWA KV out of the window freed."""
        branch = req.branch
        if branch is None or not req.protected < branch <= up_to:
            branch = None
        if not finished:
            self._slide(req, (branch or up_to) - 1)
        return branch

    def _state_end(self, req: Req, up_to: int, finished: bool) -> int | None:
        """MambaComponent.prepare_for_caching_req: where the insert ends (None: nothing is inserted). With the extra
        buffer, at the request's latest state checkpoint (a finished request's previous one when the latest lies
        past its tokens, if it has two slots), its slot given to the tree and a running request given a new one;
        without (no_buffer), at the tokens' end, a running request's state copied into a new slot."""
        if not self.c.mamba_extra_buffer:
            if not finished:
                self._take_state()  # the copy the tree keeps (a finished request's own slot goes instead)
            return up_to
        if finished:
            cache = req.track or 0
            if cache > up_to:  # _select_finished_checkpoint: the other ping-pong slot's, if there is one
                prev = req.prev_track
                cache = prev if self.tracking == 2 and prev is not None and prev <= up_to else 0
            if cache <= 0:
                self._free_states(req)
                return None
        else:
            if req.track is None:
                req.prev_track = None
                return None
            cache = req.track
            self._take_state()  # donate_mamba_ping_pong_slot: the request's replacement slot
        return min(up_to, cache)

    def _release(self, req: Req, checkpoint: bool = True) -> None:
        """release_kv_cache: with the radix cache, the request's tokens go into the tree (``checkpoint``) or
        back to the pool, and its lock is dropped; without, every token goes back. The row is freed."""
        kv = paged(req.kv, self.c.page_size)
        if self.tree is not None:
            if checkpoint:
                self._checkpoint(req, req.kv, finished=True)
            self.pool.free += kv - req.protected  # its pages past the tree's
            if req.node is not None:
                self.tree.unlock(req.node, req.boundary)
                req.node = None
        else:
            self.pool.free += kv
        if self.pool.swa is not None:  # free_kv_row_segments: the SWA KV still held, above the window's edge
            self.pool.swa += max(0, kv - max(req.protected, req.evicted))
            req.evicted = 0
        req.kv = req.protected = 0
        if self.mamba and (req.state or req.pingpong):  # what the tree did not take
            self._free_states(req)
        if req.holds_slot:
            self.pool.rows += 1
            req.holds_slot = False

    def abort(self, rid: int) -> bool:
        """abort_request: a waiting request leaves at once (True); a running one finishes when its batch's
        result is processed (False)."""
        req = self.by_id.get(rid)
        if req is None or req.finished:
            return False
        if req in self.waiting:
            self.waiting.remove(req)
            self._release(req)
            req.finished = req.aborted = True
            self.near.discard(req)
            del self.by_id[rid]
            return True
        req.aborted = True
        return False

    def in_use(self) -> int:
        """Tokens neither free nor evictable from the radix cache."""
        return self.c.max_total_num_tokens - self.reclaimable()

    def reclaimable(self) -> int:
        """Free tokens and the radix cache's evictable ones: the whole pool once every request has ended."""
        return self.pool.free + (self.tree.evictable if self.tree is not None else 0)

    def returned(self) -> int:
        """The full pool's reclaimable tokens, less any token the sliding-window pool or any slot the Mamba pool has
        not got back: the whole full pool once every request has ended and every pool is whole."""
        pool, tree, c = self.pool, self.tree, self.c
        got = self.reclaimable()
        if pool.swa is not None and c.swa_tokens is not None:
            got -= c.swa_tokens - pool.swa - (tree.swa_evictable if tree is not None else 0)
        if pool.states is not None and c.mamba_slots is not None:
            got -= c.mamba_slots - pool.states - (tree.mamba_evictable if tree is not None else 0)
        return got

    # -- the schedule --
    def next_batch(self) -> Batch | None:
        """get_next_batch_to_run."""
        running = self.running
        exclude = self.chunked
        if exclude is not None and exclude.extend_end > exclude.prefix_len:
            if self.tree is not None:  # stash_chunked_request: checkpoint_kv_cache
                self._checkpoint(exclude, exclude.extend_end)
            exclude.prefix_len = exclude.extend_end
        last = self.last
        if last is not None and last.extend:
            rows = [*last.reqs, *last.decoding]  # a mixed batch's requests: its prefills, then its decode rows
            last.reqs = [r for r in rows if not r.finished and r is not exclude]
            last.decoding = ()
            if len(last.reqs) < len(rows):
                running.is_full = False
            if last.reqs and last is not running:
                if not running.reqs:
                    running = Batch(last.reqs, prefill_only=last.prefill_only)
                else:
                    running.reqs.extend(last.reqs)
                    running.prefill_only = running.prefill_only and last.prefill_only
        if self.ended:  # filter_batch: the finished leave (a no-op when none has finished since the last pass)
            self.ended = False
            n = len(running.reqs)
            running.reqs = [r for r in running.reqs if not r.finished]
            if len(running.reqs) < n:
                running.is_full = False
        self.running = running
        new = self._prefill(running)
        if new is not None:
            return new
        if running.reqs and not running.prefill_only:  # a batch of prefill-only requests never decodes
            return self._decode(running)
        return None

    def _prefill(self, running: Batch) -> Batch | None:  # noqa: C901 - one admission pass
        if not running.reqs or self.window is not None:  # with an SWA pool every pass tries again
            running.is_full = False
        if (running.is_full or not self.waiting) and self.chunked is None:
            return None
        running_bs = len(running.reqs)
        if self._allocatable(running_bs, 0) <= 0 and self.chunked is None:
            running.is_full = True
            return None
        self._calc_priority()
        mixed = self.c.mixed_chunk and self.c.chunked_prefill_size is not None
        adder = Adder(self, running, len(running.reqs) if mixed else 0)
        if self.chunked is not None:
            self.chunked = adder.add_chunked(self.chunked)
        for req in self.waiting:
            if adder.state() is Add.OTHER:
                break
            held = sum(1 for r in adder.can_run if r.holds_slot)
            if len(adder.can_run) >= self._allocatable(running_bs, held):
                running.is_full = True
            if running.is_full:
                break
            if self.tree is not None:  # init_next_round_input: match the tree
                assert req.seq is not None
                self._match(req, req.fill - 1, admit=True)
            else:
                req.prefix_len = 0
            res = adder.add_one(req)
            if res is not Add.CONTINUE:
                if res is Add.NO_TOKEN:
                    running.is_full = bool(adder.can_run) or bool(running.reqs)
                if self.mamba and req.state and not (adder.can_run and adder.can_run[-1] is req):
                    assert self.pool.states is not None  # not admitted: its copied state goes back
                    self.pool.states += 1
                    req.state = False
                break
        if not adder.can_run:
            return None
        chosen = set(map(id, adder.can_run))
        self.waiting = [r for r in self.waiting if id(r) not in chosen]
        if adder.new_chunked is not None:
            assert self.chunked is None
            self.chunked = adder.new_chunked
        batch = Batch(list(adder.can_run), extend=True, chunked=self.chunked)
        batch.prefill_only = all(r.max_new == 0 for r in batch.reqs)  # ScheduleBatch.init_new: no token to generate
        page = self.c.page_size
        if self.window is not None and self.tree is None:  # maybe_evict_swa for an extend, without prefix sharing
            chunk = self.c.chunked_prefill_size or 0
            for r in batch.reqs:
                if r.holds_slot and (not self.overlap or r.extends >= 2):  # the overlap loop: its last chunk may run
                    self._slide(r, r.prefix_len - chunk if self.overlap else r.prefix_len)
        if self.mamba:  # alloc_req_slots: ensure_mamba_capacity, then each request's state and ping-pong slots
            assert self.pool.states is not None
            pp = self.tracking
            needed = sum((not r.state) + pp * (not r.pingpong) for r in batch.reqs)
            if self.pool.states < needed and self.tree is not None:
                self._evict(0, 0, needed - self.pool.states)
            for r in batch.reqs:
                self.pool.states -= (not r.state) + pp * (not r.pingpong)
                r.state, r.pingpong = True, bool(pp)
        demand = sum(r.extend_len for r in batch.reqs)  # alloc_for_extend: and a page each when paged
        self._evict_to_free(demand + (len(batch.reqs) * page if page > 1 else 0))
        for r in batch.reqs:  # prepare_for_extend
            r.retracted = False
            if not r.holds_slot:
                self.pool.rows -= 1
                r.holds_slot = True
            self.pool.alloc(paged(r.extend_end, page) - paged(r.prefix_len, page))
            r.kv = r.extend_end
            r.extends += 1
            if self.mamba and r.extend_len >= self.c.mamba_grid:  # prepare_for_extend: the state checkpointed
                grid = self.c.mamba_grid
                track = r.prefix_len + r.extend_len // grid * grid
                branch = r.state_branch
                chunk = self.c.mamba_chunk
                if branch is not None and r.prefix_len < branch < r.extend_end and (branch - r.prefix_len) % chunk == 0:
                    track = branch
                r.track = track
        if mixed and running.reqs:  # mix_with_running: the running requests decode in this batch
            finishing = self._finishing_inflight(running.reqs)
            if finishing:
                running.reqs = [r for r in running.reqs if r not in finishing]
                running.is_full = False
            if running.reqs and self._fits(running.reqs):
                self._alloc_decode(running.reqs)  # prepare_for_decode
                batch.decoding = tuple(running.reqs)
                batch.prefill_only = False
                self.running = Batch(is_full=running.is_full)
        return batch

    def _match(self, req: Req, length: int, admit: bool = False) -> None:
        """match_kv_cache: the request's cached prefix and its last node, and where the full KV alone would have
        matched further (an SWA pool: swa_branching_seqlen; a Mamba pool: mamba_branching_seqlen, on the checkpoint
        grid). ``admit``: init_next_round_input's match, which copies the matched state into a slot of the request's
        own (copy on write) and always sets the Mamba branch; a probe keeps a branch it does not find."""
        tree = self.tree
        assert tree is not None and req.seq is not None
        req.prefix_len, req.last, hit = tree.match(req.seq, length)
        req.branch = hit if self.window is not None and hit > req.prefix_len else None
        if self.mamba:
            grid = self.c.mamba_grid
            aligned = hit // grid * grid
            branch = aligned if aligned > req.prefix_len else None
            if admit or branch is not None:
                req.state_branch = branch
            if admit and req.last.state and not req.state:
                if self.pool.states is not None and self.pool.states < 1:
                    boundary = tree.lock(req.last)  # the matched state is not the one evicted for its copy
                    self._take_state()
                    tree.unlock(req.last, boundary)
                else:
                    self._take_state()
                req.state = True

    def _allocatable(self, running_bs: int, held: int) -> int:
        """get_num_allocatable_reqs: requests a prefill may still admit — the running cap's room and the free
        request rows, with the rows the requests counted already hold."""
        return max(0, min(self.c.max_running_requests - running_bs, self.pool.rows + held))

    def _finishing_inflight(self, reqs: list[Req]) -> list[Req]:
        """_reqs_finishing_inflight: with the overlap schedule, the requests whose queued result gives them their
        last token by length."""
        near = self.near
        if not near or not self.inflight:
            return []
        inflight = set(self.inflight)
        return [r for r in reqs if r in near and r in inflight]

    def _calc_priority(self) -> None:
        """SchedulePolicy.calc_priority: FCFS keeps the queue (and refreshes the waiting prefixes); LPM, while the
        queue holds at most 128 requests, matches each against the tree and sorts by the longest cached prefix,
        a request whose short hit another waiting request shares put last (in-batch prefix caching)."""
        tree = self.tree
        if tree is None or self.c.schedule_policy != "lpm" or len(self.waiting) > WAITING_QUEUE_PREFIX_MATCH_MAX:
            self._touch_waiting()
            return
        later: set[int] = set()
        seen: list[tuple[Seq, int]] = []
        matched: dict[int, int] = {}
        for r in self.waiting:
            assert r.seq is not None
            self._match(r, r.fill)
            matched[r.rid] = min(r.prefix_len, r.fill - 1)
            if r.prefix_len <= IN_BATCH_PREFIX_CACHING_CHECK_THRESHOLD:
                shared = max((min(r.seq.diverge(o), r.fill, n) for o, n in seen), default=0)
                if shared >= IN_BATCH_PREFIX_CACHING_DEPRIORITIZE_THRESHOLD:
                    later.add(r.rid)
                else:
                    seen.append((r.seq, r.fill))
        self.waiting.sort(key=lambda r: float("inf") if r.rid in later else -matched[r.rid])

    def _touch_waiting(self) -> None:
        """SchedulePolicy._touch_waiting_prefixes: every 32nd pass the waiting requests' cached prefixes are
        touched, the queue's head last (FCFS with the radix cache and LRU eviction)."""
        if self.tree is None or not self.waiting:
            return
        refresh = self.refresh_calls % WAITING_PREFIX_REFRESH_INTERVAL == 0
        self.refresh_calls += 1
        if refresh:
            for r in reversed(self.waiting[:WAITING_QUEUE_PREFIX_MATCH_MAX]):
                assert r.seq is not None
                self.tree.match(r.seq, r.fill)  # touch_prefix: the walk alone

    def _decode(self, batch: Batch) -> Batch | None:
        """update_running_batch. With the overlap schedule, the requests whose queued result gives them their
        last token by length sit this step out (_reqs_finishing_inflight)."""
        initial = len(batch.reqs)
        finishing = self._finishing_inflight(batch.reqs)
        if finishing:
            batch.reqs = [r for r in batch.reqs if r not in finishing]
        if not batch.reqs:
            batch.is_full = False
            return None
        fits = self._fits(batch.reqs)
        if not fits and finishing:
            batch.is_full = False  # the queued result frees them at the end of this step
            return None
        if not fits:
            keep = sorted(range(len(batch.reqs)), key=lambda i: (batch.reqs[i].output, -batch.reqs[i].prompt),
                          reverse=True)  # fmt: skip
            retracted = []
            first = True
            while first or not self._fits([batch.reqs[i] for i in keep]):
                if len(keep) == 1:
                    break
                first = False
                req = batch.reqs[keep.pop()]
                self._release(req, checkpoint=False)
                self._evict_to_free(len(keep) * RETRACT_DECODE_STEPS)
                req.prefix_len = req.extend_end = req.decodes = req.extends = 0  # reset_for_retract: KV re-prefilled
                req.branch = req.state_branch = None
                req.retracted = True
                retracted.append(req)
            if not self._fits([batch.reqs[i] for i in keep]):  # SGLang aborts the last request; not followed here
                raise RefusedConfigError(
                    "SGLang aborts a request here: 'Out of memory even after retracting all other requests in the "
                    "decode batch' - one request's next decode step does not fit its KV pool; give a shorter "
                    "--context-length or more GPU memory"
                )
            batch.reqs = [batch.reqs[i] for i in keep]  # filter_batch(keep_indices=...): in the order kept
            decoded = sum(r.output for r in batch.reqs)
            budget = sum(r.max_new for r in batch.reqs)
            self.ratio = min(1.0, (decoded + RETRACT_DECODE_STEPS * len(batch.reqs)) / (budget + 1))
            self.retracted_reqs.extend(retracted)
            self.waiting.extend(retracted)
        else:
            self.ratio = max(self.ratio - self.ratio_decay, self.ratio_min)
        if len(batch.reqs) < initial:
            batch.is_full = False
        if not batch.reqs:
            return None
        tracked, sums = self._alloc_decode(batch.reqs)  # prepare_for_decode
        return Batch(batch.reqs, extend=False, tracked=tracked, sums=sums)

    def _fits(self, reqs: list[Req]) -> bool:
        """check_decode_mem: evict for the next decode step, then whether its pages are free."""
        need = self._decode_need(reqs)
        pool = self.pool
        if need > pool.free or pool.swa is not None or pool.states is not None:
            self._evict_to_free(need)
        return pool.available() >= need

    def launch(self, batch: Batch | None, end: float = 0.0) -> Launched | None:
        """The event loop once the batch is chosen (event_loop_normal, or event_loop_overlap): the launched batch
        whose result is processed now — this one, or with the overlap schedule the previous one, once this one is
        launched."""
        entry = None
        if batch is not None:
            entry = Launched((*batch.reqs, *batch.decoding), batch.chunked, batch.extend, batch.decoding, end,
                             batch.tracked)  # fmt: skip
        done = entry
        if self.overlap:
            if entry is not None:
                self.queue.append(entry)
            done = self.queue.popleft() if self.last is not None else None
            self.inflight = self.queue[0].rows if self.queue else ()
        self.last = batch
        return done

    def process(self, launched: Launched) -> list[Req]:
        """process_batch_result: one token for every request whose prefill is complete; those done released."""
        done: list[Req] = []
        rids: list[int] = []
        self.sampled_rids = rids
        partial, prefill, decoding = launched.partial, launched.prefill, launched.decoding
        if not prefill and not launched.tracked:  # a decode batch: no chunk, no checkpoint, no refused prompt
            self._process_decode(launched.rows, done, rids)
            return done
        tracked = dict(launched.tracked) if launched.tracked else None
        for r in launched.rows:
            if r is partial or r.finished or r.retracted:
                continue  # a partial chunk samples nothing; a request aborted or retracted meanwhile neither
            out = r.output = r.output + 1
            if out + 1 >= r.max_new:
                self.near.add(r)
            if r.error is None:
                rids.append(r.rid)
            if tracked is not None and r in tracked:  # its state checkpointed at this step's length
                r.prev_track, r.track = r.track, tracked[r]
            if r.aborted or out >= r.max_new:
                self._finish(r, done)
            elif prefill and self.tree is not None and r not in decoding:
                self._checkpoint(r, r.extend_end)
                r.prefix_len = r.extend_end
        return done

    def _process_decode(self, rows: tuple[Req, ...], done: list[Req], rids: list[int]) -> None:
        """process() for a decode batch, the common case, in one tight pass."""
        near = self.near
        for r in rows:
            if r.finished or r.retracted:
                continue  # a request aborted or retracted meanwhile samples nothing
            out = r.output = r.output + 1
            rids.append(r.rid)
            if out + 1 >= r.max_new:
                if out >= r.max_new:
                    self._finish(r, done)
                    continue
                near.add(r)
            if r.aborted:
                self._finish(r, done)

    def _finish(self, r: Req, done: list[Req]) -> None:
        r.finished = self.ended = True
        self.near.discard(r)
        self._release(r)
        del self.by_id[r.rid]
        done.append(r)


class Adder:
    """PrefillAdder with PrefillBudget (one token pool) or SWAPrefillBudget (a full and an SWA pool). ``mixed``:
    the decode rows a mixed batch will carry."""

    def __init__(self, s: Scheduler, running: Batch, mixed: int = 0) -> None:
        c = s.c
        self.s = s
        self.page = c.page_size
        self.window = s.window  # the tree's sliding_window_size
        self.swa_offset = 0
        self.rem_input = c.max_prefill_tokens - mixed
        self.rem_chunk = c.chunked_prefill_size - mixed if c.chunked_prefill_size is not None else None
        self.total_offset = float(mixed)
        self.current_offset = float(mixed)
        for r in running.reqs:
            ratio = 1.0 if r.ignore_eos else s.ratio
            self.total_offset += min(r.max_new - r.output, CLIP_MAX_NEW_TOKENS) * ratio
        self.can_run: list[Req] = []
        self.new_chunked: Req | None = None
        self.running = running

    @property
    def rem_total(self) -> float:
        return self.s.reclaimable() - self.total_offset  # PrefillBudget: available and evictable, less reserved

    @property
    def rem_current(self) -> float:
        return self.s.reclaimable() - self.current_offset

    @property
    def rem_swa(self) -> int:
        """SWAPrefillBudget.remaining_swa: the SWA pool's free and evictable tokens, less what admissions reserved."""
        s = self.s
        assert s.pool.swa is not None
        return s.pool.swa + (s.tree.swa_evictable if s.tree is not None else 0) - self.swa_offset

    def swa_tokens(self, extend: int, max_new: int, limit: int | None = None) -> int:
        """estimate_swa_kv_tokens: a request's peak SWA reservation — the part of its allocation beyond one window,
        the window (or less, for a short request), a page."""
        window = self.window
        assert window is not None
        allocated = extend if limit is None else min(extend, limit)
        return max(allocated - window, 0) + min(extend + max_new, window) + self.page

    def state(self) -> Add:
        if not (self.rem_total > 0 and self.rem_current > 0 and (self.window is None or self.rem_swa > 0)):
            return Add.NO_TOKEN
        if self.rem_input <= 0:
            return Add.OTHER
        if self.rem_chunk is not None and self.rem_chunk <= 0:
            return Add.OTHER
        return Add.CONTINUE

    def _charge(self, extend: int, max_new: int) -> None:
        tokens = paged(extend, self.page)
        self.total_offset += tokens + self.page + max_new
        self.current_offset += tokens + self.page
        if self.window is not None:
            self.swa_offset += self.swa_tokens(tokens, max_new, self.rem_chunk)
        self.rem_input -= tokens
        if self.rem_chunk is not None:
            self.rem_chunk -= tokens

    def add_chunked(self, req: Req) -> Req | None:
        assert self.rem_chunk is not None
        avail = min(self.rem_chunk, int(self.rem_total))
        if self.window is not None:  # SWAPrefillBudget.available_chunk_tokens: none left, the chunk waits
            avail = min(avail, self.rem_swa - self.page)
            if avail <= 0:
                return req
        rem = avail if avail > 0 else self.rem_chunk
        cand = req.fill - req.prefix_len
        truncated = cand > rem
        new_len = min(cand, rem)
        req.extend_end = req.prefix_len + new_len
        self.can_run.append(req)
        self._charge(new_len, 0 if truncated else min(req.max_new, CLIP_MAX_NEW_TOKENS))
        return req if truncated else None

    def add_one(self, req: Req) -> Add:
        tree = self.s.tree
        if req.ignore_eos and tree is None:
            return self._add_ignore_eos(req)
        if tree is None:
            return self._add_one(req)
        assert req.last is not None
        boundary = tree.lock(req.last)  # _lock_node while the admission is chosen; kept as req.lock when committed
        res = self._add_one(req)
        if self.can_run and self.can_run[-1] is req:
            req.node, req.boundary = req.last, boundary
            req.protected = req.kv = req.prefix_len
        else:
            tree.unlock(req.last, boundary)
        return res

    def _add_one(self, req: Req) -> Add:
        max_new = min(max(req.max_new - req.output, 0), CLIP_MAX_NEW_TOKENS)
        cand = req.fill - req.prefix_len
        total = cand + max_new + self.page
        if not total < self.rem_total:
            return Add.NO_TOKEN
        input_tokens = paged(cand, self.page)
        limit = self.rem_chunk
        if self.window is not None:  # SWAPrefillBudget.check_prefill
            needed = self.swa_tokens(input_tokens, max_new, limit)
            if not needed < self.rem_swa:
                cap = 0
                swa_size = self.s.c.swa_tokens
                assert swa_size is not None
                if needed >= swa_size:  # it never fits whole: a chunk that leaves room for its window may
                    cap = max(0, (self.rem_swa - self.swa_tokens(0, max_new)) // self.page * self.page)
                if limit is None or cap <= 0:
                    return Add.NO_TOKEN
                limit = min(limit, cap)
        if self.rem_chunk is None and self.can_run and input_tokens >= self.rem_input:
            return Add.OTHER
        extend, admit_new = cand, min(req.max_new, CLIP_MAX_NEW_TOKENS)
        chunked = False
        if limit is not None and input_tokens > limit:
            extend = limit // self.page * self.page
            extend = (req.prefix_len + extend) // self.page * self.page - req.prefix_len
            if extend <= 0:
                return Add.OTHER
            chunked, admit_new = True, 0
        req.extend_end = req.prefix_len + extend
        self.can_run.append(req)
        if chunked:
            self.new_chunked = req
        self._charge(extend, admit_new)
        return self.state()

    def _add_ignore_eos(self, req: Req) -> Add:
        """add_one_req_ignore_eos: the pool must hold every admitted request's remaining tokens in turn."""
        cand = req.fill - req.prefix_len
        paged_input = paged(cand, self.page) + self.page
        if not paged_input <= min(self.rem_current, self.rem_total):
            return Add.NO_TOKEN
        states = []
        for r in [req, *self.running.reqs, *self.can_run]:
            ratio = 1.0 if r.ignore_eos else self.s.ratio
            left = r.max_new * ratio - r.output
            if left > 0:
                states.append((left, r.prompt + r.output))
        states.sort(key=lambda x: x[0])
        cur = self.rem_current - paged_input
        freed = 0
        for i, (left, occupied) in enumerate(states):
            bs = len(states) - i
            if cur + freed - left * bs <= IGNORE_EOS_RESERVE_TOKENS * bs:
                return Add.NO_TOKEN
            freed += occupied
        if self.rem_chunk is None or cand <= self.rem_chunk:
            req.extend_end = req.fill
            self.can_run.append(req)
            self._charge(req.extend_len, min(req.max_new, CLIP_MAX_NEW_TOKENS))
        else:
            if self.rem_chunk <= 0:
                return Add.OTHER
            req.extend_end = req.prefix_len + self.rem_chunk
            self.can_run.append(req)
            self.new_chunked = req
            self._charge(self.rem_chunk, 0)
        return self.state()


def run_by_iteration(
    config: SchedulerConfig,
    requests: Sequence[tuple[int, int, int, int | None]],
    ignore_eos: bool = False,
    overlap: bool = True,
    shared_prefix: int = 0,
    concurrency: int | None = None,
    limit: int = 1_000_000,
) -> list[StepRecord]:
    """The workload as the recorder drives SGLang's event loop (event_loop_overlap, SGLang's default, or
    event_loop_normal): request i = (arrival iteration, prompt, output tokens, cancel iteration or None) is added,
    or aborted, before the iteration of that number. ``concurrency``: a closed loop — the first N arrive at once,
    and each request that ends lets the next one arrive before the following iteration."""
    s = Scheduler(config, overlap)
    plan = IterationPlan.of(requests, concurrency)
    steps: list[StepRecord] = []
    for it in range(limit):
        for i in plan.arrivals.get(it, ()):
            _, prompt, output, _ = requests[i]
            s.add(i, prompt, output, ignore_eos, shared_prefix)
        for i in plan.cancels.get(it, ()):
            s.abort(i)
        batch = s.next_batch()
        retracted = len(s.retracted_reqs)
        s.retracted_reqs.clear()
        ratio = s.ratio
        extend: tuple[tuple[int, int], ...] = ()
        decode: tuple[int, ...] = ()
        if batch is not None:
            if batch.extend:
                extend = tuple((r.rid, r.extend_len) for r in batch.reqs) + tuple((r.rid, 1) for r in batch.decoding)
            else:
                decode = tuple(r.rid for r in batch.reqs)
        running, waiting = len(s.running.reqs), len(s.waiting)
        done = s.launch(batch)
        ended = s.process(done) if done is not None else []
        evictable = s.tree.evictable if s.tree is not None else 0
        full = swa_free = swa_evictable = mamba_free = mamba_evictable = None
        if s.pool.swa is not None:
            full, swa_free, swa_evictable = s.pool.free, s.pool.swa, s.tree.swa_evictable if s.tree is not None else 0
        if s.pool.states is not None:
            mamba_free, mamba_evictable = s.pool.states, s.tree.mamba_evictable if s.tree is not None else 0
        steps.append(StepRecord(it, extend, decode, running, waiting, retracted, ratio, s.pool.available(), evictable,
                                full, swa_free, swa_evictable, mamba_free, mamba_evictable))  # fmt: skip
        plan.ended(it, len(ended))
        idle = batch is None and not s.waiting and not s.running.reqs and s.chunked is None and not s.queue
        if it > plan.last and idle:
            break
    return steps
