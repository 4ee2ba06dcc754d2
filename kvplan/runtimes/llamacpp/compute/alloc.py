"""A port of ggml's graph allocator (ggml/src/ggml-alloc.c, llama.cpp 2026-10-01): ggml_gallocr_alloc_graph_impl
over a graph's leafs and nodes, with ggml_dyn_tallocr's best-fit free blocks, chunks and in-place reuse. The
compute buffer llama.cpp reserves is the sum of the chunks' max_size (ggml_gallocr_reserve_n_size)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass

from kvplan.facts.ggml_types import GGML_TYPES_BY_NAME, cuda_alloc_size
from kvplan.runtimes.llamacpp.compute.tensor import FLAG_INPUT, FLAG_OUTPUT, INPLACE_OPS, Tensor

SIZE_MAX = 2**64 - 1
#: GGML_VBUFFER_MAX_CHUNKS
MAX_CHUNKS = 16


def _align(size: int, alignment: int) -> int:
    """aligned_offset(NULL, size, alignment)."""
    return size + (alignment - size % alignment) % alignment


class _Chunk:
    __slots__ = ("blocks", "max_size")

    def __init__(self, size: int) -> None:
        self.blocks: list[list[int]] = [[0, size]]  # [offset, size], sorted by offset
        self.max_size = 0


class DynAllocator:
    """ggml_dyn_tallocr: the offsets of one buffer type's compute buffer."""

    def __init__(self, alignment: int, max_buffer_size: int = SIZE_MAX) -> None:
        self.alignment = alignment
        self.max_chunk_size = min(max_buffer_size, SIZE_MAX // 2)
        self.chunks: list[_Chunk] = []

    def _new_chunk(self, min_size: int) -> int:
        if len(self.chunks) >= MAX_CHUNKS:
            return -1
        size = max(min_size, self.max_chunk_size)
        if len(self.chunks) == MAX_CHUNKS - 1:
            size = SIZE_MAX // 2
        self.chunks.append(_Chunk(size))
        return len(self.chunks) - 1

    def alloc(self, size: int) -> tuple[int, int]:
        size = _align(size, self.alignment)
        best_chunk = best_block = -1
        for c, chunk in enumerate(self.chunks):  # best fit among the blocks before each chunk's last
            best_size = SIZE_MAX
            blocks = chunk.blocks
            for i in range(len(blocks) - 1):
                bsize = blocks[i][1]
                if bsize >= size and bsize <= best_size:
                    best_chunk, best_block, best_size = c, i, bsize
        if best_block == -1:  # the last block of a chunk (may grow the chunk)
            best_reuse: int | None = None  # None: INT64_MIN
            for c, chunk in enumerate(self.chunks):
                if chunk.blocks:
                    last = chunk.blocks[-1]
                    reuse = chunk.max_size - last[0] - size
                    better_reuse = (best_reuse is None or best_reuse < 0) and (best_reuse is None or reuse > best_reuse)
                    better_fit = best_reuse is not None and 0 <= reuse < best_reuse
                    if last[1] >= size and (better_reuse or better_fit):
                        best_chunk, best_block, best_reuse = c, len(chunk.blocks) - 1, reuse
        if best_block == -1:
            best_chunk = self._new_chunk(size)
            best_block = 0
        if best_chunk == -1:  # pragma: no cover - the last chunk is virtually endless
            raise MemoryError("graph allocation: failed to reserve memory")
        chunk = self.chunks[best_chunk]
        block = chunk.blocks[best_block]
        offset = block[0]
        block[0] += size
        block[1] -= size
        if block[1] == 0:
            del chunk.blocks[best_block]
        chunk.max_size = max(chunk.max_size, offset + size)
        return best_chunk, offset

    def free(self, chunk_id: int, offset: int, size: int) -> None:
        """ggml_dyn_tallocr_free_bytes."""
        size = _align(size, self.alignment)
        blocks = self.chunks[chunk_id].blocks
        for i, block in enumerate(blocks):
            if block[0] + block[1] == offset:
                block[1] += size
                if i < len(blocks) - 1 and block[0] + block[1] == blocks[i + 1][0]:
                    block[1] += blocks[i + 1][1]
                    del blocks[i + 1]
                return
            if offset + size == block[0]:
                block[0] = offset
                block[1] += size
                if i > 0 and blocks[i - 1][0] + blocks[i - 1][1] == block[0]:
                    blocks[i - 1][1] += block[1]
                    del blocks[i]
                return
        pos = 0
        while pos < len(blocks) and blocks[pos][0] < offset:
            pos += 1
        blocks.insert(pos, [offset, size])

    @property
    def size(self) -> int:
        return sum(c.max_size for c in self.chunks)


@dataclass(frozen=True, slots=True)
class BufferType:
    """What the allocator needs of a backend buffer type: its alignment, maximum buffer size and allocation size
    (ggml_backend_buft_get_alloc_size: the tensor's bytes, except where `fa_f16_copies` or `cuda_rows` say
    otherwise)."""

    name: str
    alignment: int = 32
    max_size: int = SIZE_MAX
    #: CUDA's buffer type (ggml_backend_cuda_buffer_type_get_alloc_size → ggml_cuda_flash_attn_ext_get_alloc_size):
    #: a FLASH_ATTN_EXT result also holds f16 copies of a K and V that are not f16, 128-byte aligned, where the
    #: MMA or tile kernel runs (batches of prompt tokens)
    fa_f16_copies: bool = False
    #: CUDA's too: a quantized tensor's last row padded (facts.ggml_types.cuda_alloc_size)
    cuda_rows: bool = False
    #: Metal's: some ops' scratch in their own allocation (metal_alloc_size)
    metal_scratch: bool = False

    def alloc_size(self, t: Tensor) -> int:
        if self.metal_scratch:
            return metal_alloc_size(t)
        size = self._fa_size(t) if self.fa_f16_copies and t.op == "FLASH_ATTN_EXT" else t.nbytes
        if self.cuda_rows and t.type not in _PLAIN:
            kind = GGML_TYPES_BY_NAME.get(t.type)
            if kind is not None:
                size = cuda_alloc_size(kind, t.ne[0], size)
        return size

    @staticmethod
    def _fa_size(t: Tensor) -> int:
        size = t.nbytes
        k, v = t.srcs[1], t.srcs[2]
        if k is not None and k.type != "f16":
            size = _align(size, 128) + _elements(k) * 2
        if v is not None and v.type != "f16":
            v_is_k_view = (
                k is not None
                and v.view_src is not None
                and (v.view_src is k or (v.view_src is k.view_src and v.view_offs == k.view_offs))
            )
            if not v_is_k_view:
                size = _align(size, 128) + _elements(v) * 2
        return size


def _pad(n: int, m: int) -> int:
    return (n + m - 1) // m * m


#: ggml-metal-impl.h: flash attention's queries and KV cells per simdgroup (the matrix and the vector kernels),
#: and the MoE product's partial maxima
_NQPSG, _NCPSG, _VEC_NQPSG, _VEC_NCPSG, _NPART_AMAX = 8, 64, 1, 32, 256
_METAL_KV_F16 = frozenset({"q4_0", "q4_1", "q5_0", "q5_1", "q8_0"})
_METAL_SPARSE_HEADS = frozenset({(32, 32), (64, 64), (96, 96), (96, 64), (128, 128), (192, 128), (192, 192),
                                 (256, 256), (320, 256), (512, 512), (576, 512)})  # fmt: skip
_METAL_SPARSE_TYPES = frozenset({"f16", "bf16", "f32", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0"})


def metal_alloc_size(t: Tensor) -> int:
    """ggml_backend_metal_buffer_type_get_alloc_size (ggml-metal.cpp, llama.cpp 2026-10-01) and the ggml_metal_op_*
    _extra_* functions it adds (ggml-metal-ops.cpp): a MoE product's expert counts, row ids and maxima; flash
    attention's padding, block map, per-workgroup partial results, f16 copies of a quantized K and V and sparse
    index lists (always reserved, "to avoid graph reallocations"); a sort's or cumulative sum's second copy; top-k's
    pairs. A reading of the source, not recorded."""
    size = t.nbytes
    if t.op == "MUL_MAT_ID":
        w, ids = t.srcs[0], t.srcs[2]
        assert w is not None and ids is not None
        n_expert = w.ne[2]
        return size + 4 * n_expert + 4 * n_expert * ids.ne[1] + 8 + _NPART_AMAX * 4
    if t.op in ("CUMSUM", "ARGSORT"):
        return size * 2
    if t.op == "TOP_K":
        src = t.srcs[0]
        assert src is not None
        return 2 * 4 * _elements(src)
    if t.op != "FLASH_ATTN_EXT":
        return size
    q, k, v = t.srcs[0], t.srcs[1], t.srcs[2]
    mask = t.srcs[3] if len(t.srcs) > 3 else None
    assert q is not None and k is not None and v is not None
    v_view_of_k = v.view_src is not None and (
        v.view_src is k or (v.view_src is k.view_src and v.view_offs == k.view_offs)
    )
    kv_f16 = q.ne[1] >= 32 and k.type in _METAL_KV_F16
    nb11, nb21 = k.nb[1], v.nb[1]
    if kv_f16:
        nb11, nb21 = 2 * k.ne[0], 2 * (k.ne[0] if v_view_of_k else v.ne[0])
    mask_rows = mask.ne[1] * mask.ne[2] * mask.ne[3] if mask is not None else 0
    size += _NCPSG * (nb11 * k.ne[2] * k.ne[3] + nb21 * v.ne[2] * v.ne[3] + 2 * mask_rows)  # extra_pad
    if mask is not None:  # extra_blk
        vec = q.ne[1] < 20 and q.ne[0] % 32 == 0
        nqptg, ncpsg = (_VEC_NQPSG, _VEC_NCPSG) if vec else (_NQPSG, _NCPSG)
        blocks = -(-q.ne[1] // nqptg) * -(-mask.ne[0] // ncpsg)
        size += _pad(blocks * mask.ne[2] * mask.ne[3], 32)
    size += 4 * (min(q.ne[1], 32) * q.ne[2] * q.ne[3] * 32 * (v.ne[0] + 2))  # extra_tmp
    k_size = _pad(2 * _elements(k), 16)  # extra_kv_f16
    size += k_size if v_view_of_k else k_size + _pad(2 * _elements(v), 16)
    n_kv_max = int(t.param[len("n_kv_max=") :]) if t.param.startswith("n_kv_max=") else 0
    if (  # extra_idx: the sparse path's index lists
        0 < n_kv_max <= 4096 and mask is not None and (k.ne[0], v.ne[0]) in _METAL_SPARSE_HEADS
        and k.type in _METAL_SPARSE_TYPES
    ):  # fmt: skip
        size += _pad(4 * _pad(n_kv_max, _VEC_NCPSG) * mask_rows, 16)
    return size


#: the types no buffer pads (not quantized): most of a graph's tensors
_PLAIN = frozenset({"f32", "f16", "bf16", "i32", "i64", "i16", "i8", "f64"})


def _elements(t: Tensor) -> int:
    return t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3]


CPU = BufferType("CPU")


class GraphAllocator:
    """ggml_gallocr over one graph: `reserve` returns the bytes of each buffer type's compute buffer."""

    def __init__(self, bufts: Sequence[BufferType] = (CPU,)) -> None:
        self.bufts = tuple(bufts)
        self.allocs = self._new_allocs()
        self.live: dict[int, Tensor] = {}
        self._peak = [0] * len(self.bufts)
        self._peak_live: list[tuple[Tensor, ...]] = [()] * len(self.bufts)

    def _new_allocs(self) -> list[DynAllocator]:
        """One allocator per buffer type (ggml_gallocr_new_n: a buffer type given twice shares one)."""
        allocs: list[DynAllocator] = []
        for i, b in enumerate(self.bufts):
            same = next((j for j in range(i) if self.bufts[j] == b), None)
            allocs.append(allocs[same] if same is not None else DynAllocator(b.alignment, b.max_size))
        return allocs

    def _free_extra(self, node: Tensor, parent: Tensor) -> None:
        alloc = self.allocs[parent.buffer]
        psize = _align(self.bufts[parent.buffer].alloc_size(parent), alloc.alignment)
        nsize = _align(self.bufts[node.buffer].alloc_size(node), alloc.alignment)
        if psize > nsize:
            alloc.free(parent.chunk, parent.offset + nsize, psize - nsize)

    def _allocate(self, node: Tensor, buffer_id: int) -> None:
        """ggml_gallocr_allocate_node."""
        if node.external or node.allocated or node.view_src is not None:
            return
        node.allocated = True
        if node.op in INPLACE_OPS:
            for parent in node.srcs:
                if parent is None or not parent.allocated:  # not ours (external, a view, or freed)
                    continue
                if parent.flags & FLAG_OUTPUT or (parent.view_src is not None and parent.view_src.flags & FLAG_OUTPUT):
                    continue
                if not node.same_layout(parent):
                    continue
                if parent.n_children == 1 and parent.n_views == 0:
                    # (a view parent is never ours: ggml's view branch here cannot be taken)
                    node.buffer, node.chunk, node.offset = parent.buffer, parent.chunk, parent.offset
                    parent.allocated = False
                    live = self.live
                    live.pop(id(parent), None)
                    live[id(node)] = node
                    self._free_extra(node, parent)
                    return
        node.buffer = buffer_id
        alloc = self.allocs[buffer_id]
        node.chunk, node.offset = alloc.alloc(self.bufts[buffer_id].alloc_size(node))
        self.live[id(node)] = node
        size = alloc.size
        if size > self._peak[buffer_id]:
            self._peak[buffer_id] = size
            self._peak_live[buffer_id] = tuple(self.live.values())  # (peak_parts keeps this buffer's)

    def _free(self, node: Tensor) -> None:
        """ggml_gallocr_free_node."""
        if node.flags & FLAG_OUTPUT:
            return
        self.allocs[node.buffer].free(node.chunk, node.offset, self.bufts[node.buffer].alloc_size(node))
        node.allocated = False
        self.live.pop(id(node), None)

    def reserve(  # noqa: C901 - ggml_gallocr_alloc_graph_impl's passes, in its order
        self,
        leafs: Sequence[Tensor],
        nodes: Sequence[Tensor],
        node_buffers: Sequence[int] | None = None,
        leaf_buffers: Sequence[int] | None = None,
        marks: Mapping[int, Callable[[], None]] | None = None,
    ) -> list[int]:
        """ggml_gallocr_reserve_n_size: the bytes of every buffer type's compute buffer for this graph (`marks`:
        called before the node of that index is allocated, to read the allocator's state)."""
        self.live = {}
        self._peak = [0] * len(self.bufts)
        self._peak_live = [()] * len(self.bufts)
        self.allocs = self._new_allocs()
        for lst in (leafs, nodes):  # the hash table's reset
            for t in lst:
                t.n_children = t.n_views = 0
                t.allocated = False
                for x in t.srcs:
                    if x is not None:
                        x.n_children = x.n_views = 0
                        x.allocated = False
                x = t.view_src
                if x is not None:
                    x.n_children = x.n_views = 0
                    x.allocated = False
        nbufs = node_buffers if node_buffers is not None else [0] * len(nodes)
        allocate = self._allocate
        for i, leaf in enumerate(leafs):
            allocate(leaf, leaf_buffers[i] if leaf_buffers is not None else 0)
        for node, b in zip(nodes, nbufs, strict=True):
            if node.view_src is not None and node.op != "NONE":
                node.view_src.n_views += 1
            if node.flags & FLAG_INPUT:
                allocate(node, b)
            for src in node.srcs:
                if src is None:
                    continue
                src.n_children += 1
                if src.flags & FLAG_INPUT:
                    allocate(src, b)
        marks = marks or {}
        for i, (node, b) in enumerate(zip(nodes, nbufs, strict=True)):
            if i in marks:
                marks[i]()
            for parent in node.srcs:
                if parent is not None and not parent.allocated:
                    allocate(parent, b)
            allocate(node, b)
            for parent in node.srcs:
                if parent is None:
                    continue
                parent.n_children -= 1
                if parent.n_children == 0 and parent.n_views == 0:
                    vs = parent.view_src
                    if vs is not None:
                        vs.n_views -= 1
                        if vs.n_views == 0 and vs.n_children == 0 and vs.allocated:
                            self._free(vs)
                    elif parent.allocated:
                        self._free(parent)
        return [a.size for a in self.allocs]

    def state(self, name: Callable[[Tensor], tuple[Hashable, bool]]) -> Hashable:
        """What decides every later allocation: each buffer's chunks (free blocks, size) and each live tensor's
        place, name and remaining uses (`name`: a tensor's name and whether its uses count, else only whether it
        has any)."""
        seen: list[DynAllocator] = []
        chunks = []
        for a in self.allocs:
            if any(a is x for x in seen):
                continue
            seen.append(a)
            chunks.append(tuple((tuple(map(tuple, c.blocks)), c.max_size) for c in a.chunks))
        live = []
        for t in self.live.values():
            key, counted = name(t)
            uses = (t.n_children, t.n_views) if counted else t.n_children + t.n_views > 0
            live.append(((t.buffer, t.chunk, t.offset), key, uses))
        live.sort(key=lambda x: x[0])
        return tuple(chunks), tuple(live)

    def peak_parts(self, buffer_id: int = 0) -> tuple[tuple[str, int], ...]:
        """What a buffer held when it reached its size, by role (role_of), largest first; the rest is free space
        the allocator could not reuse."""
        parts: dict[str, int] = {}
        alloc = self.allocs[buffer_id]
        for t in self._peak_live[buffer_id]:
            if self.allocs[t.buffer] is not alloc:
                continue
            role = role_of(t)
            size = self.bufts[buffer_id].alloc_size(t)
            parts[role] = parts.get(role, 0) + _align(size, self.allocs[buffer_id].alignment)
        held = sum(parts.values())
        if self._peak[buffer_id] > held:
            parts["free blocks between them"] = self._peak[buffer_id] - held
        return tuple(sorted(parts.items(), key=lambda kv: -kv[1]))


def role_of(t: Tensor) -> str:
    """A compute tensor's role, by the op and weight that produced it."""
    name = t.name
    if "#" in name:  # the scheduler's copy of a split's input (sched.py): of a weight, or of another device's tensor
        return "weights copied in" if t.usage else "copies from other devices"
    if t.flags & FLAG_INPUT:
        return "inputs"
    if name == "output":
        return "logits"
    if name.startswith("ffn"):
        return "feed-forward"
    if name.startswith("cache_k"):
        return "attention scores"
    if name.startswith(("attn", "cache_v", "attention")):
        return "attention"
    if name == "token_embd":
        return "embeddings"
    return "activations"
