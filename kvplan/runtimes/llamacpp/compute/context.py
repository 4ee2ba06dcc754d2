"""llama.cpp's graph helpers (src/llama-graph.cpp, llm_graph_context) over kvplan's ggml port: the inputs, norms,
Q/K/V projections, attention through the KV cache (src/llama-kv-cache.cpp: cpy_k, cpy_v, get_k, get_v), the
feed-forward block and the output, each building the tensors llama.cpp builds in the order it builds them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kvplan.facts.ggml_types import GGML_TYPES_BY_NAME
from kvplan.runtimes.llamacpp.compute import ggml
from kvplan.runtimes.llamacpp.compute.ggml import Graph
from kvplan.runtimes.llamacpp.compute.tensor import (
    INPUT_LAYER,
    OUTPUT_LAYER,
    PIN_CPU_WITHOUT_KV_OFFLOAD,
    USAGE_CACHE,
    USAGE_WEIGHTS,
    Tensor,
    set_building,
)

__all__ = ["OUTPUT_LAYER", "GraphContext", "KVInputs", "RSInputs", "Reserve", "Weights"]


@dataclass(frozen=True, slots=True)
class Reserve:
    """What llama_context::graph_reserve builds the worst-case graph for (sched_reserve): n_tokens =
    min(n_ctx, n_ubatch) rounded up to a multiple of n_seqs, n_seqs = n_seq_max, n_outputs = n_tokens; the KV
    cache as init_full() presents it (n_kv = its size per stream)."""

    n_tokens: int
    n_seqs: int
    n_outputs: int
    flash_attn: bool
    kv_unified: bool
    type_k: str
    type_v: str
    n_stream: int  # KV streams (1 when unified)
    kv_size: int = 0  # the full-attention cache's cells per stream (n_kv of the reserve graph: init_full)
    kv_size_swa: int = 0  # the sliding-window cache's
    rs_size: int = 0  # the recurrent state's rows (mem_size: one per sequence)
    type_r: str = "f32"  # the recurrent caches' types (conv state r, SSM / delta-net state s)
    type_s: str = "f32"
    n_ctx_seq: int = 0  # the context per sequence (cparams.n_ctx_seq)
    #: the layers built, when not all of them (layers.py: runs of identical layers shortened; () is all)
    layers: tuple[int, ...] = ()
    #: the caches laid out for flash attention though the graph runs without it (-fa auto where the backend has
    #: no kernel: V rows, not transposed); None: as `flash_attn`
    cache_flash_attn: bool | None = None
    #: DeepSeek-V4's compressed caches' cells per stream (CSA ÷4, which its indexer cache shares; HCA ÷128)
    comp_cells: tuple[int, int] = (0, 0)

    @property
    def layout_fa(self) -> bool:
        """Whether the caches are laid out for flash attention (V stored by rows, llama_kv_cache's !v_trans)."""
        return self.flash_attn if self.cache_flash_attn is None else self.cache_flash_attn


@dataclass(slots=True)
class KVInputs:
    """One KV cache's graph inputs (llm_graph_input_attn_kv, or one half of the iSWA pair)."""

    kv_size: int  # cells per stream: n_kv of the reserve graph (init_full)
    k_idxs: Tensor
    v_idxs: Tensor
    mask: Tensor
    k_rot: Tensor | None
    v_rot: Tensor | None
    #: n_embd_v_gqa_max: without flash attention every layer's transposed V cache is this wide, a narrower
    #: layer's V padded to it ([TAG_V_CACHE_VARIABLE])
    v_width: int = 0


@dataclass(slots=True)
class RSInputs:
    """A recurrent cache's graph inputs (llm_graph_input_rs): the state-copy indices and their two views."""

    s_copy: Tensor
    s_copy_main: Tensor
    s_copy_extra: Tensor


@dataclass(frozen=True, slots=True)
class Weights:
    """Which optional model tensors exist (llama.cpp builds ops only for the tensors a GGUF has): names as in
    the GGUF without the "blk.N." prefix ("attn_q.bias", "ffn_up.scale", "rope_freqs", "output.scale")."""

    present: frozenset[str] = field(default_factory=frozenset)
    #: every optional tensor exists: a metadata-only GGUF, whose tensors llama.cpp's loader creates all
    #: (llama_model_init_from_user, as the oracle records them)
    all_optional: bool = False

    def has(self, name: str) -> bool:
        return self.all_optional or name in self.present


class GraphContext:
    """llm_graph_context for one reserve: builds into self.gf."""

    def __init__(self, r: Reserve, weights: Weights) -> None:
        self.r = r
        self.w = weights
        self.gf = Graph()
        self.n_tokens = r.n_tokens
        #: the layer being built (INPUT_LAYER before the first, OUTPUT_LAYER after the last): its weights are
        #: that layer's, its norms are pinned to that layer's device
        self.il = INPUT_LAYER
        #: res->t_inp_embd: the input embeddings as build_inp_embd leaves them (before any scale)
        self.t_inp_embd: Tensor | None = None
        #: res->t_inp_tokens: the token ids input (DeepSeek-V4's hash layers route by it)
        self.t_inp_tokens: Tensor | None = None

    @property
    def il(self) -> int:
        return self._il

    @il.setter
    def il(self, il: int) -> None:
        self._il = il
        set_building(il)

    def layers(self, n_layer: int) -> Sequence[int]:
        """The layers to build: all, or the reserve's shortened list (layers.py)."""
        return self.r.layers or range(n_layer)

    # --- weights

    def wt(self, ne0: int, ne1: int = 1, ne2: int = 1, name: str = "", type_: str = "f16") -> Tensor:
        """A weight of the layer being built (f16 unless its type matters: an f32 one a view keeps, and the
        per-tensor `.scale`s, f32 in every file, whose repeats take compute memory)."""
        t = ggml.weight("f32" if name.endswith(".scale") else type_, (ne0, ne1, ne2), name)
        t.usage, t.layer = USAGE_WEIGHTS, self.il
        return t

    def opt(self, name: str, *ne: int) -> Tensor | None:
        """An optional tensor: a leaf when the model has it."""
        if not self.w.has(name):
            return None
        t = ggml.weight("f32" if name.endswith(".scale") else "f16", ne, name)
        t.usage, t.layer = USAGE_WEIGHTS, self.il
        return t

    def output_scale(self) -> Tensor | None:
        """output.scale: loaded for an NVFP4 output only, so a metadata-only GGUF has none."""
        return self.wt(1, name="output.scale") if "output.scale" in self.w.present else None

    # --- inputs

    def inp_embd(self, n_embd: int, n_vocab: int, scale: float = 0.0, n_embd_inp: int = 0) -> Tensor:
        """build_inp_embd: the tokens' rows (padded to n_embd_inp where the input is wider: Qwen3-VL's deepstack,
        the input itself then viewed n_embd wide as res->t_inp_embd) or the embeddings input."""
        wide = n_embd_inp if n_embd_inp > n_embd else n_embd
        tokens = self.t_inp_tokens = ggml.inp("i32", (self.n_tokens,), "inp_tokens")
        embd = ggml.inp("f32", (wide, self.n_tokens), "inp_embd")
        cur = ggml.get_rows(self.wt(n_embd, n_vocab, name="token_embd"), tokens)
        cur.name = "token_embd"
        if wide > n_embd:
            cur = ggml.pad(cur, wide)
        self.gf.expand(cur)  # ggml_build_forward_select: both paths, the tokens' first
        self.gf.expand(embd)
        if wide > n_embd:
            cur = ggml.view(cur, (n_embd, self.n_tokens), (cur.nb[1],), 0)
        self.t_inp_embd = cur
        if scale:
            cur = ggml.unary(cur, "SCALE")
        self.gf.expand(cur)
        return cur

    def inp_pos(self, n_pos_per_embd: int = 1) -> Tensor:
        return ggml.inp("i32", (self.n_tokens * n_pos_per_embd,), "inp_pos")

    def inp_out_ids(self) -> Tensor:
        return ggml.inp("i32", (self.r.n_outputs,), "out_ids")

    def attn_inp_kv(self, kv_size: int, head_k: int, head_v: int, n_embd_v_gqa_max: int, rot: bool = True) -> KVInputs:
        """build_attn_inp_kv_impl: k/v row indices, the KQ mask and the rotation inputs of one cache (`rot` off:
        build_inp_mem_hybrid_iswa, which builds none)."""
        r = self.r
        k_idxs = ggml.inp("i64", (r.n_tokens,), "attn_inp_k_idxs")
        v_rows = r.n_tokens if r.layout_fa else r.n_tokens * n_embd_v_gqa_max
        v_idxs = ggml.inp("i64", (v_rows,), "attn_inp_v_idxs")
        k_rot = self._rot(r.type_k, head_k, True) if rot else None
        v_rot = self._rot(r.type_v, head_v, False) if rot else None
        return KVInputs(kv_size, k_idxs, v_idxs, self._kq_mask(kv_size), k_rot, v_rot, n_embd_v_gqa_max)

    def rs_inp(self) -> RSInputs:
        """build_rs_inp_impl over init_full() (n_rs = the cache's size, head 0)."""
        n_rs, n_seqs = self.r.rs_size, self.r.n_seqs
        s_copy = ggml.inp("i32", (n_rs,), "rs_s_copy")
        main = ggml.view(s_copy, (n_seqs,), (), 0)
        extra = ggml.view(s_copy, (n_rs - n_seqs,), (), n_seqs * s_copy.nb[0])
        return RSInputs(s_copy, main, extra)

    def rs_cache(self, type_: str, n_embd: int, name: str, layer: int) -> Tensor:
        """One layer's recurrent cache tensor (cache_r_l / cache_s_l): [n_embd, rows], in the layer's cache
        buffer."""
        t = ggml.weight(type_, (n_embd, self.r.rs_size), name)
        t.usage, t.layer = USAGE_CACHE, layer
        return t

    def rs(
        self, inp: RSInputs, s: Tensor, state_size: int, get_rows: Callable[[Tensor, Tensor], Tensor] | None = None
    ) -> Tensor:
        """llm_graph_context::build_rs over init_full() (rs_head 0, rs_z 0): the zeroed first state, the
        sequences' states gathered (by `get_rows`: Mamba-2's scan reads them itself), the rest copied back."""
        n_seqs, n_rs = self.r.n_seqs, self.r.rs_size
        states = ggml.reshape(s, state_size, s.ne[1])
        zero = ggml.view(states, (state_size,), (), 0)
        self.gf.expand(ggml.scale_inplace(zero))
        out = (get_rows or ggml.get_rows)(states, inp.s_copy_main)
        self.gf.expand(out)
        extra = ggml.get_rows(states, inp.s_copy_extra)
        dst = ggml.view(s, (state_size, n_rs - n_seqs), (s.nb[1],), n_seqs * s.nb[1])
        self.gf.expand(ggml.cpy(extra, dst))
        return out

    def _kq_mask(self, kv_size: int) -> Tensor:
        """build_attn_inp_kq_mask: f16 with flash attention, f32 without; one block of rows per stream."""
        r = self.r
        n_stream = 1 if r.kv_unified else r.n_seqs
        return ggml.inp(
            "f16" if r.flash_attn else "f32", (kv_size, r.n_tokens // n_stream, 1, n_stream), "attn_inp_kq_mask"
        )

    def attn_inp_no_cache(self) -> Tensor:
        """build_attn_inp_no_cache: the KQ mask of the batch against itself (a diffusion model's: no KV cache)."""
        n = self.r.n_tokens
        return ggml.inp("f16" if self.r.flash_attn else "f32", (n, n, 1, 1), "self_kq_mask")

    def attn_no_cache(
        self, mask: Tensor, wo: Tensor | None, wo_b: Tensor | None, wo_s: Tensor | None, q: Tensor, k: Tensor, v: Tensor
    ) -> Tensor:
        """build_attn over llm_graph_input_attn_no_cache: this batch's Q, K and V straight into the attention."""
        for t in (q, k, v):
            self.gf.expand(t)
        cur = self.attn_mha(q, k, v, None, mask, None)
        if wo is not None:
            cur = self.lora_mm(wo, cur, wo_s)
        if wo_b is not None:
            cur = ggml.binary("ADD", cur, wo_b)
        return cur

    def attn_inp_lid(self, kv_size: int, head: int) -> KVInputs:
        """build_attn_inp_k_dsa_impl's indexer half: the indexer cache's row indices, its KQ mask (f16: the CPU
        runs the fused lightning indexer) and its Hadamard rotation (always made for the lightning indexers)."""
        r = self.r
        k_idxs = ggml.inp("i64", (r.n_tokens,), "attn_inp_k_idxs_lid")
        n_stream = 1 if r.kv_unified else r.n_seqs
        mask = ggml.inp("f16", (kv_size, r.n_tokens // n_stream, 1, n_stream), "attn_inp_kq_mask_lid")
        n = 64
        while 0 < n * 2 <= head and head % (n * 2) == 0:
            n *= 2
        return KVInputs(kv_size, k_idxs, k_idxs, mask, ggml.inp("f32", (n, n), "attn_inp_k_rot"), None)

    def lid_cache(self, head: int, kv_size: int, layer: int) -> Tensor:
        """The lightning indexer's key cache of a layer (one head, the K cache's type)."""
        return self.kv_cache(self.r.type_k, head, kv_size, f"cache_lid_l{layer}", layer)

    def attn_inp_k(self, kv_size: int) -> KVInputs:
        """build_attn_inp_k_impl: a K-only cache (MLA: V is a view of K) — its row indices and KQ mask."""
        r = self.r
        k_idxs = ggml.inp("i64", (r.n_tokens,), "attn_inp_k_idxs")
        return KVInputs(kv_size, k_idxs, k_idxs, self._kq_mask(kv_size), None, None)

    def attn_k(
        self,
        kv: KVInputs,
        layer: int,
        wo: Tensor | None,
        wo_s: Tensor | None,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        v_mla: Tensor | None,
        head_k: int,
        n_head_kv: int,
        top_k: Tensor | None = None,
        sinks: Tensor | None = None,
    ) -> Tensor:
        """build_attn over llm_graph_input_attn_k: Q, V then K expanded, K stored, V read as K's first
        v.ne[0] columns, attention decompressed by v_mla; with `top_k` (llm_graph_input_attn_k_dsa) the KQ mask
        is a -inf copy with the top-k cells of each query set to 0 and the causal mask added."""
        r = self.r
        gf = self.gf
        gf.expand(q)
        gf.expand(v)
        gf.expand(k)
        cache_k = self.kv_cache(r.type_k, head_k * n_head_kv, kv.kv_size, f"cache_k_l{layer}", layer)
        gf.expand(self.cpy_k(cache_k, k, kv.k_idxs))
        mask = kv.mask if top_k is None else top_k_mask(kv.mask, top_k)
        kk = self.get_k(cache_k, head_k, n_head_kv)
        vv = ggml.view(kk, (v.ne[0], kk.ne[1], kk.ne[2], kk.ne[3]), (kk.nb[1], kk.nb[2], kk.nb[3]), 0)
        n_kv_max = top_k.ne[0] if top_k is not None else 0
        cur = self.attn_mha(q, kk, vv, None, mask, sinks, v_mla, n_kv_max=n_kv_max)
        return self.lora_mm(wo, cur, wo_s) if wo is not None else cur

    def kv_cache(self, type_: str, n_embd: int, kv_size: int, name: str, layer: int, streams: int = 0) -> Tensor:
        """One layer's K or V cache tensor: [n_embd, cells, streams (the reserve's unless given)], in the layer's
        cache buffer."""
        t = ggml.weight(type_, (n_embd, kv_size, streams or self.r.n_stream), name)
        t.usage, t.layer = USAGE_CACHE, layer
        return t

    def cpy_k(self, cache: Tensor, cur: Tensor, idxs: Tensor) -> Tensor:
        """llama_kv_cache::cpy_k (and cpy_v with flash attention): the batch's rows set into the cache."""
        n_embd, kv_size, n_stream = cache.ne[0], cache.ne[1], cache.ne[2]
        rows = ggml.view(cur, (n_embd, cur.ne[2]), (cur.nb[2],), 0)
        dst = ggml.reshape(cache, n_embd, kv_size * n_stream) if n_stream > 1 else cache
        return ggml.set_rows(dst, rows, idxs)

    @staticmethod
    def get_k(cache: Tensor, head: int, n_head_kv: int) -> Tensor:
        """llama_kv_cache::get_k (and get_v untransposed): [head, heads, cells, streams]."""
        n_embd, kv_size, n_stream = cache.ne[0], cache.ne[1], cache.ne[2]
        t = cache.type
        strides = (ggml.row_size(t, head), ggml.row_size(t, n_embd), ggml.row_size(t, n_embd * kv_size))
        return ggml.view(cache, (head, n_head_kv, kv_size, n_stream), strides, 0)

    @staticmethod
    def _rot(type_: str, head: int, grow: bool) -> Tensor | None:
        """build_input_k_rot / build_input_v_rot: a Hadamard rotation input for quantized caches."""
        if not GGML_TYPES_BY_NAME[type_].is_quantized or head <= 0 or head % 64:
            return None
        n = 64
        if grow:
            n = 64
            while True:
                n *= 2
                if head % n:
                    break
            n //= 2
        return ggml.inp("f32", (n, n), "attn_inp_rot")

    # --- blocks

    def norm(
        self, cur: Tensor, mw: Tensor | None, mb: Tensor | None = None, rms: bool = True, with_il: bool = True
    ) -> Tensor:
        """build_norm (`with_il`: called with the layer's index, so the callback pins the norm to its device)."""
        cur = ggml.unary(cur, "RMS_NORM" if rms else "NORM")
        if (
            (mw is not None or mb is not None) and with_il and self.il >= 0
        ):  # cb(cur, "norm", il): pinned to the layer's device
            cur.pin = self.il
        if mw is not None:
            cur = ggml.binary("MUL", cur, mw)
        if mb is not None:
            cur = ggml.binary("ADD", cur, mb)
        return cur

    def lora_mm(self, w: Tensor, cur: Tensor, w_s: Tensor | None = None) -> Tensor:
        res = ggml.mul_mat(w, cur)
        if w_s is not None:
            res = ggml.binary("MUL", res, w_s)
        return res

    def qkv(
        self, cur: Tensor, n_embd: int, head_k: int, n_head: int, n_head_kv: int, head_v: int, fused: bool = False
    ) -> tuple[Tensor, Tensor, Tensor]:
        """build_qkv (reshape on): the fused attn_qkv where the file has one (the loader skips it for a
        metadata-only model: TENSOR_SKIP_IF_VIRTUAL), else separate Q/K/V; `fused`: a class whose loader creates
        only the fused one (gpt2.cpp, starcoder.cpp)."""
        n_tokens = self.n_tokens
        if fused or ("attn_qkv" in self.w.present and not self.w.all_optional):
            n_q, n_k, n_v = n_head * head_k, n_head_kv * head_k, n_head_kv * head_v
            qkv = self.lora_mm(self.wt(n_embd, n_q + n_k + n_v, name="attn_qkv"), cur, self.opt("attn_qkv.scale", 1))
            b = self.opt("attn_qkv.bias", n_q + n_k + n_v)
            if b is not None:
                qkv = ggml.binary("ADD", qkv, b)
            ty = qkv.type
            q = ggml.view(qkv, (head_k, n_head, n_tokens), (ggml.row_size(ty, head_k), qkv.nb[1]), 0)
            k = ggml.view(qkv, (head_k, n_head_kv, n_tokens), (ggml.row_size(ty, head_k), qkv.nb[1]),
                          ggml.row_size(ty, n_q))  # fmt: skip
            v = ggml.view(qkv, (head_v, n_head_kv, n_tokens), (ggml.row_size(ty, head_v), qkv.nb[1]),
                          ggml.row_size(ty, n_q + n_k))  # fmt: skip
            return q, k, v
        outs = []
        for name, heads, head in (
            ("attn_q", n_head, head_k),
            ("attn_k", n_head_kv, head_k),
            ("attn_v", n_head_kv, head_v),
        ):
            t = self.lora_mm(self.wt(n_embd, heads * head, name=name), cur, self.opt(name + ".scale", 1))
            b = self.opt(name + ".bias", heads * head)
            if b is not None:
                t = ggml.binary("ADD", t, b)
            outs.append((t, heads, head))
        q, k, v = (ggml.reshape(t, head, heads, n_tokens) for t, heads, head in outs)
        return q, k, v

    def projections(self, cur: Tensor, n_embd: int, widths: Sequence[tuple[str, int]]) -> list[Tensor]:
        """build_qkv's separate path without the reshape: each projection with the scale and bias the model has."""
        outs = []
        for name, width in widths:
            t = self.lora_mm(self.wt(n_embd, width, name=name), cur, self.opt(name + ".scale", 1))
            b = self.opt(name + ".bias", width)
            outs.append(ggml.binary("ADD", t, b) if b is not None else t)
        return outs

    def hadamard(self, cur: Tensor, rot: Tensor) -> Tensor:
        """llama_mul_mat_hadamard."""
        n = rot.ne[0]
        total = cur.ne[0] * cur.ne[1] * cur.ne[2] * cur.ne[3]
        res = ggml.reshape(cur, n, total // n) if _is_contiguous(cur) else ggml.cont(cur, n, total // n)
        res = ggml.mul_mat(rot, res)
        return ggml.reshape(res, *cur.ne)

    def _cpy_v(self, cache_v: Tensor, v: Tensor, v_idxs: Tensor, n_embd_v: int) -> Tensor:
        """llama_kv_cache::cpy_v: rows set into the cache, or (without flash attention, V transposed) elements."""
        if self.r.layout_fa:
            return self.cpy_k(cache_v, v, v_idxs)
        if ggml.row_size(v.type, n_embd_v) == v.nb[2]:
            v_cur = ggml.reshape(v, n_embd_v, v.ne[2])
        else:
            v_cur = ggml.cont(v, n_embd_v, v.ne[2])
        if n_embd_v < cache_v.ne[0]:  # [TAG_V_CACHE_VARIABLE]
            v_cur = ggml.pad(v_cur, cache_v.ne[0])
        n_el_v = cache_v.ne[0] * cache_v.ne[1] * cache_v.ne[2] * cache_v.ne[3]
        v_view = ggml.reshape(cache_v, 1, n_el_v)
        v_cur = ggml.reshape(v_cur, 1, v_cur.ne[0] * v_cur.ne[1] * v_cur.ne[2] * v_cur.ne[3])
        return ggml.set_rows(v_view, v_cur, v_idxs)

    def attn_kv(
        self,
        kv: KVInputs,
        layer: int,
        wo: Tensor | None,
        wo_b: Tensor | None,
        wo_s: Tensor | None,
        q: Tensor,
        k: Tensor | None,
        v: Tensor | None,
        n_head_kv: int,
        head_k: int,
        head_v: int,
        sinks: Tensor | None = None,
        iswa: bool = False,
        softcap: bool = False,
        source: int | None = None,
    ) -> Tensor:
        """build_attn with a KV cache (llm_graph_input_attn_kv; `iswa`: the llm_graph_input_attn_kv_iswa
        overload, which expands K before V; `softcap`: hparams.attn_soft_cap, Gemma 2; K and V None with the
        `source` layer whose cache this layer reads: Gemma 3n's shared KV, nothing stored)."""
        r = self.r
        gf = self.gf
        if kv.k_rot is not None:
            q = self.hadamard(q, kv.k_rot)
            k = self.hadamard(k, kv.k_rot) if k is not None else None
        if kv.v_rot is not None and v is not None:
            v = self.hadamard(v, kv.v_rot)
        gf.expand(q)
        for t in (k, v) if iswa else (v, k):
            if t is not None:
                gf.expand(t)
        kv_size, n_stream = kv.kv_size, r.n_stream
        n_embd_v = head_v * n_head_kv
        owner = layer if source is None else source
        cache_k = self.kv_cache(r.type_k, head_k * n_head_kv, kv_size, f"cache_k_l{owner}", owner)
        v_trans = not r.layout_fa
        width = max(kv.v_width, n_embd_v) if v_trans else n_embd_v
        cache_v = self.kv_cache(r.type_v, width, kv_size, f"cache_v_l{owner}", owner)
        if k is not None:
            gf.expand(self.cpy_k(cache_k, k, kv.k_idxs))
        if v is not None:
            gf.expand(self._cpy_v(cache_v, v, kv.v_idxs, n_embd_v))
        # get_k / get_v
        kk = self.get_k(cache_k, head_k, n_head_kv)
        if not v_trans:
            vv = self.get_k(cache_v, head_v, n_head_kv)
        else:
            vv = ggml.view(
                cache_v,
                (kv_size, n_head_kv, head_v, n_stream),
                (
                    ggml.row_size(r.type_v, kv_size * head_v),
                    ggml.row_size(r.type_v, kv_size),
                    ggml.row_size(r.type_v, kv_size * width),
                ),
                0,
            )
        cur = self.attn_mha(q, kk, vv, None, kv.mask, sinks, softcap=softcap)
        if kv.v_rot is not None:
            cur = self.hadamard(cur, kv.v_rot)
        if wo is not None:
            cur = self.lora_mm(wo, cur, wo_s)
        if wo_b is not None:
            cur = ggml.binary("ADD", cur, wo_b)
        return cur

    def attn_mha(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        kq_b: Tensor | None,
        mask: Tensor,
        sinks: Tensor | None,
        v_mla: Tensor | None = None,
        softcap: bool = False,
        n_kv_max: int = 0,
    ) -> Tensor:
        """build_attn_mha (`n_kv_max`: the cells a query may attend at most, the top-k's; a backend's sparse flash
        attention sizes its index lists by it)."""
        v_trans = v.nb[1] > v.nb[2]
        n_stream = k.ne[3]
        q = ggml.view(
            q, (q.ne[0], q.ne[1], q.ne[2] // n_stream, n_stream), (q.nb[1], q.nb[2], q.nb[2] * (q.ne[2] // n_stream)), 0
        )
        q = ggml.permute(q, 0, 2, 1, 3)
        k = ggml.permute(k, 0, 2, 1, 3)
        v = ggml.permute(v, 0, 2, 1, 3)
        if self.r.flash_attn and kq_b is None:
            if v_trans:
                v = ggml.transpose(v)
            if k.type == "f32":
                k = ggml.cast(k, "f16")
            if v.type == "f32":
                v = ggml.cast(v, "f16")
            cur = ggml.flash_attn_ext(q, k, v, mask, sinks)
            if n_kv_max:
                cur.param = f"n_kv_max={n_kv_max}"  # (ggml_flash_attn_ext_set_n_kv_max)
            if v_mla is not None:
                cur = ggml.permute(cur, 0, 2, 1, 3)
                cur = ggml.mul_mat(v_mla, cur)
                cur = ggml.permute(cur, 0, 2, 1, 3)
                cur = ggml.cont(cur)
            cur = ggml.reshape(cur, cur.ne[0] * cur.ne[1], cur.ne[2] * cur.ne[3])
        else:
            kq = ggml.mul_mat(k, q)
            if softcap:  # kq = cap · tanh(kq / cap)
                kq = ggml.unary(ggml.unary(ggml.unary(kq, "SCALE")), "SCALE")
            if kq_b is not None:
                kq = ggml.binary("ADD", kq, kq_b)
            kq = ggml.soft_max(kq, mask, sinks, scaled=True)
            if not v_trans:
                v = ggml.cont(ggml.transpose(v))
            kqv = ggml.mul_mat(v, kq)
            if v_mla is not None:
                kqv = ggml.mul_mat(v_mla, kqv)
            cur = ggml.permute(kqv, 0, 2, 1, 3)
            cur = ggml.cont(cur, cur.ne[0] * cur.ne[1], cur.ne[2] * cur.ne[3])
            cur.pin = PIN_CPU_WITHOUT_KV_OFFLOAD
        self.gf.expand(cur)
        return cur

    def lora_mm_id(self, w: Tensor, cur: Tensor, ids: Tensor, w_s: Tensor | None) -> Tensor:
        res = ggml.mul_mat_id(w, cur, ids)
        if w_s is not None:
            n_expert = w_s.ne[0]
            s = ggml.reshape(w_s, 1, n_expert, 1)
            s = ggml.repeat(s, 1, n_expert, cur.ne[2], 1)
            s = ggml.get_rows(s, ids)
            res = ggml.binary("MUL", res, s)
        return res

    def moe_ffn(  # noqa: C901 - build_moe_ffn's branches, in its order
        self,
        cur: Tensor,
        n_expert: int,
        n_expert_used: int,
        n_ff: int,
        gating: str = "softmax",
        norm_w: bool = True,
        w_scale: float = 0.0,
        exp_probs_b: bool = False,
        expert_groups: tuple[int, int] = (0, 0),
        act: str = "silu",
        gate_inp_b: bool = False,
        expert_bias: bool = False,
        scales: bool = True,
        gate_up: bool = False,
        weight_before: bool = False,
        select_logits: bool = False,
        logits: Tensor | None = None,
        select_sigmoid: bool = False,
        clamp: bool = False,
        situ_linear: bool = False,
        selected: Tensor | None = None,
    ) -> Tensor:
        """build_moe_ffn: the router, top-k selection (with expert groups), the experts' up/gate/down through
        mul_mat_id, weighting and the sum over the selected experts (`weight_before`: Llama 4 weights the input
        repeated per expert instead of the experts' output; `select_logits`: Llama 4 selects by the logits;
        `logits`: the router's logits computed by the caller, probs_in; act "relu_sqr": up only, ReLU²;
        `select_sigmoid`: the experts picked by the sigmoid of the logits, GroveMoE; `clamp`: the layer's
        swiglu_clamp_exp, which the classes outside ggml_swiglu_clamp's list apply op by op)."""
        n_embd, n_tokens = cur.ne[0], cur.ne[1]
        if logits is None:
            logits = self.lora_mm(self.wt(n_embd, n_expert, name="ffn_gate_inp"), cur)
        if gate_inp_b:
            logits = ggml.binary("ADD", logits, self.wt(n_expert, name="ffn_gate_inp.bias"))
        if gating == "softmax":
            probs = ggml.soft_max(logits, None)
        elif gating == "sigmoid":
            probs = ggml.unary(logits, kind="sigmoid")
        elif gating == "softmax_weight":
            probs = logits
        elif gating == "sqrtsoftplus":  # DeepSeek-V4
            probs = ggml.unary(ggml.unary(logits, kind="softplus"), "SQRT")
        else:
            raise NotImplementedError(f"expert gating {gating}")
        selection = logits if select_logits else probs  # Llama 4 picks its experts by the logits
        if exp_probs_b:
            selection = ggml.binary("ADD", probs, self.wt(n_expert, name="exp_probs_b.bias"))
        if select_sigmoid:  # GroveMoE selects by the sigmoid of the logits (LLM_ARCH_GROVEMOE)
            selection = ggml.unary(logits, kind="sigmoid")
        n_groups, n_group_used = expert_groups
        if n_groups > 1 and n_tokens > 0:
            per_group = n_expert // n_groups
            groups = ggml.reshape(selection, per_group, n_groups, n_tokens)
            scores = ggml.argsort_top_k(groups, 2)
            scores = ggml.get_rows(ggml.reshape(groups, 1, groups.ne[0], groups.ne[1], groups.ne[2]), scores)
            scores = ggml.sum_rows(ggml.reshape(scores, scores.ne[1], scores.ne[2], scores.ne[3]))
            scores = ggml.reshape(scores, scores.ne[1], scores.ne[2])
            chosen = ggml.argsort_top_k(scores, n_group_used)
            sel = ggml.get_rows(groups, chosen)
            filled = ggml.dup(groups, "FILL", (groups,))
            selection = ggml.set_rows(filled, sel, chosen)
            selection = ggml.reshape(selection, n_expert, n_tokens)
        if selected is None:  # (selected_experts_in: DeepSeek-V4's hash layers pick them by token)
            selected = ggml.argsort_top_k(selection, n_expert_used)
        probs3 = ggml.reshape(probs, 1, n_expert, n_tokens)
        weights = ggml.get_rows(probs3, selected)
        if gating == "softmax_weight":
            weights = ggml.reshape(weights, n_expert_used, n_tokens)
            weights = ggml.soft_max(weights, None)
            weights = ggml.reshape(weights, 1, n_expert_used, n_tokens)
        if norm_w:
            weights = ggml.reshape(weights, n_expert_used, n_tokens)
            wsum = ggml.sum_rows(weights)
            wsum = ggml.unary(wsum, "CLAMP")
            weights = ggml.binary("DIV", weights, wsum)
            weights = ggml.reshape(weights, 1, n_expert_used, n_tokens)
        if w_scale not in (0.0, 1.0):
            weights = ggml.unary(weights, "SCALE")
        self.gf.expand(weights)
        cur = ggml.reshape(cur, n_embd, 1, n_tokens)
        if weight_before:
            cur = ggml.binary("MUL", ggml.repeat(cur, n_embd, n_expert_used, n_tokens, 1), weights)
        if gate_up:  # the merged gate_up tensor: one mul_mat_id, split into gate and up views
            # (no scale: the loader makes ffn_up_exps.scale only beside an ffn_up_exps, which a merged file lacks)
            gu = self.lora_mm_id(self.wt(n_embd, 2 * n_ff, n_expert, name="ffn_gate_up_exps"), cur, selected, None)
            g = ggml.view(gu, (n_ff, gu.ne[1], gu.ne[2]), (gu.nb[1], gu.nb[2]), 0)
            up = ggml.view(gu, (n_ff, gu.ne[1], gu.ne[2]), (gu.nb[1], gu.nb[2]), n_ff * gu.nb[0])
        else:
            up_w = self.wt(n_embd, n_ff, n_expert, name="ffn_up_exps")
            up = self.lora_mm_id(up_w, cur, selected, self.opt("ffn_up_exps.scale", n_expert) if scales else None)
            if expert_bias:
                up = ggml.add_id(up, self.wt(n_ff, n_expert, name="ffn_up_exps.bias"), selected)
        if act == "relu_sqr":  # no gate: ggml_relu, then ggml_sqr
            cur = ggml.unary(ggml.unary(up), "SQR")
        elif not gate_up:
            gate_w = self.wt(n_embd, n_ff, n_expert, name="ffn_gate_exps")
            g = self.lora_mm_id(gate_w, cur, selected, self.opt("ffn_gate_exps.scale", n_expert) if scales else None)
            if expert_bias:
                g = ggml.add_id(g, self.wt(n_ff, n_expert, name="ffn_gate_exps.bias"), selected)
        if act == "silu" and clamp:  # swiglu_clamp_exp: up clamped, SiLU of the gate clamped, their product
            up = ggml.unary(up, "CLAMP")
            cur = ggml.binary("MUL", ggml.unary(ggml.unary(g, kind="silu"), "CLAMP"), up)
        elif act in ("silu", "gelu", "relu") or act == "swiglu_oai":
            cur = ggml.glu_split(g, up)
        elif act == "situ":  # LLM_FFN_SITU (Kimi K3): β·tanh(g/β)·sigmoid(g) · (the up branch, its own tanh)
            a = ggml.unary(ggml.unary(ggml.unary(g, "SCALE"), kind="tanh"), "SCALE")
            a = ggml.binary("MUL", a, ggml.unary(g, kind="sigmoid"))
            if situ_linear:
                up = ggml.unary(ggml.unary(ggml.unary(up, "SCALE"), kind="tanh"), "SCALE")
            cur = ggml.binary("MUL", a, up)
        elif act != "relu_sqr":
            raise NotImplementedError(f"expert activation {act}")
        experts = self.lora_mm_id(
            self.wt(n_ff, n_embd, n_expert, name="ffn_down_exps"),
            cur,
            selected,
            self.opt("ffn_down_exps.scale", n_expert) if scales else None,
        )
        if expert_bias:
            experts = ggml.add_id(experts, self.wt(n_embd, n_expert, name="ffn_down_exps.bias"), selected)
        if not weight_before:
            experts = ggml.binary("MUL", experts, weights)
        self.gf.expand(experts)
        views = []
        for i in range(n_expert_used):
            v = ggml.view(experts, (n_embd, n_tokens), (experts.nb[2],), i * experts.nb[1])
            self.gf.expand(v)
            views.append(v)
        out = views[0]
        for v in views[1:]:
            out = ggml.binary("ADD", out, v)
            self.gf.expand(out)
        if n_expert_used == 1:
            out = ggml.cont(out)
        return out

    def ffn_tail(self, t: Tensor, name: str, n: int, bias: bool, scale: bool) -> Tensor:
        """A projection's bias and scale in build_ffn, where the architecture passes them and the model has them."""
        b = self.opt(name + ".bias", n) if bias else None
        if b is not None:
            t = ggml.binary("ADD", t, b)
        s = self.opt(name + ".scale", 1) if scale else None
        if s is not None:
            t = ggml.binary("MUL", t, s)
        return t

    def ffn_relu_sqr(
        self, cur: Tensor, n_embd: int, n_ff: int, suffix: str = "", bias: bool = True, scale: bool = True
    ) -> Tensor:
        """build_ffn with up and down only, LLM_FFN_RELU_SQR (ggml_relu, then ggml_sqr), the biases and scales the
        architecture passes where the model has them (Nemotron-H, Arcee)."""
        return self.ffn_seq(cur, n_embd, n_ff, suffix, bias, scale, sqr=True)

    def ffn_seq(
        self,
        cur: Tensor,
        n_embd: int,
        n_ff: int,
        suffix: str = "",
        bias: bool = True,
        scale: bool = True,
        sqr: bool = False,
        act_scales: bool = False,
    ) -> Tensor:
        """build_ffn with up and down only and one unary activation between them (GELU, ReLU; `sqr`: ReLU²), the
        biases and scales the architecture passes where the model has them (`act_scales`: GELU's output divided
        by the layer's ffn_act scales where the model has them: MPT)."""
        up, down = "ffn_up" + suffix, "ffn_down" + suffix
        cur = self.ffn_tail(ggml.mul_mat(self.wt(n_embd, n_ff, name=up), cur), up, n_ff, bias, scale)
        cur = ggml.unary(cur)
        if sqr:
            cur = ggml.unary(cur, "SQR")
        act = self.opt("ffn_act.scales", n_ff) if act_scales else None
        if act is not None:
            cur = ggml.binary("DIV", cur, act)
        return self.ffn_tail(ggml.mul_mat(self.wt(n_ff, n_embd, name=down), cur), down, n_embd, bias, scale)

    def ffn_par(
        self, cur: Tensor, n_embd: int, n_ff: int, bias: bool = True, scale: bool = True, suffix: str = "",
        clamp: bool = False,
    ) -> Tensor:  # fmt: skip
        """build_ffn with up, gate (parallel) and down, SiLU (SwiGLU): each with the bias and scale the
        architecture passes when the model has them (`suffix` "_shexp": the shared experts' tensors; `clamp`: the
        layer's swiglu_clamp_shexp, applied op by op)."""

        def tail(t: Tensor, name: str, n: int) -> Tensor:
            return self.ffn_tail(t, name, n, bias, scale)

        up, gate, down = "ffn_up" + suffix, "ffn_gate" + suffix, "ffn_down" + suffix
        tmp = tail(ggml.mul_mat(self.wt(n_embd, n_ff, name=up), cur), up, n_ff)
        g = tail(ggml.mul_mat(self.wt(n_embd, n_ff, name=gate), cur), gate, n_ff)
        if clamp:
            tmp = ggml.unary(tmp, "CLAMP")
            cur = ggml.binary("MUL", ggml.unary(ggml.unary(g, kind="silu"), "CLAMP"), tmp)
        else:
            cur = ggml.glu_split(g, tmp)
        return tail(ggml.mul_mat(self.wt(n_ff, n_embd, name=down), cur), down, n_embd)


def top_k_mask(mask: Tensor, top_k: Tensor, zeros_type: str = "f32") -> Tensor:
    """build_attn(llm_graph_input_attn_k_dsa)'s mask: ggml_fill(mask, -inf) viewed as rows of one, the top-k
    cells set from a zero-filled tensor (ggml_set_rows; f16 in DeepSeek-V4's build_top_k_mask under flash
    attention), viewed back and the causal mask added."""
    m = ggml.dup(mask, "FILL", (mask,))
    m = ggml.view(m, (1, m.ne[0], m.ne[1], m.ne[3]), (m.nb[0], m.nb[1], m.nb[2]), 0)
    idx = ggml.view(top_k, (top_k.ne[0], top_k.ne[1], top_k.ne[3], 1), (top_k.nb[1], top_k.nb[2],
                    top_k.ne[3] * top_k.nb[3]), 0)  # fmt: skip
    zeros = ggml.new(zeros_type, (1, idx.ne[0], idx.ne[1], idx.ne[2]))
    zeros = ggml.dup(zeros, "FILL", (zeros,))
    m = ggml.set_rows(m, zeros, idx)
    m = ggml.view(m, (m.ne[1], m.ne[2], 1, m.ne[3]), (m.nb[2], m.nb[3], m.nb[3]), 0)
    return ggml.binary("ADD", m, mask)


def _n(t: Tensor) -> int:
    return t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3]


def _is_contiguous(t: Tensor) -> bool:
    return t.nb == ggml._contiguous(t.type, t.ne)
