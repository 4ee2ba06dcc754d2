"""ggml's tensor constructors and graph expansion, as far as the graph allocator can tell them apart: each op's
result type, shape and strides (ggml.c: ggml_new_tensor_impl, ggml_view_impl, ggml_reshape_*, ggml_permute,
ggml_mul_mat, ggml_get_rows, ggml_set_rows, ggml_flash_attn_ext, ggml_glu_impl, ...), which results are views of
which tensor, and the order ggml_build_forward_expand puts them in (ggml_visit_parents_graph: sources left to
right, depth first; tensors without an op are leafs)."""

from __future__ import annotations

from collections.abc import Sequence

from kvplan.facts.ggml_types import GGML_TYPES_BY_NAME
from kvplan.runtimes.llamacpp.compute.tensor import FLAG_INPUT, FLAG_OUTPUT, Tensor

Shape = tuple[int, int, int, int]


def _type(name: str) -> tuple[int, int]:
    t = GGML_TYPES_BY_NAME[name]
    return t.block_bytes, t.block_elements


def row_size(type_: str, n: int) -> int:
    """ggml_row_size."""
    size, blck = _type(type_)
    return size * n // blck


def _contiguous(type_: str, ne: Shape) -> tuple[int, int, int, int]:
    size, blck = _type(type_)
    nb0 = size
    nb1 = nb0 * (ne[0] // blck)
    nb2 = nb1 * ne[1]
    return (nb0, nb1, nb2, nb2 * ne[2])


def is_contiguous(t: Tensor) -> bool:
    """ggml_is_contiguous: rows packed, then each dimension of more than one element right after the last."""
    size, blck = _type(t.type)
    if t.ne[0] != blck and t.nb[0] != size:
        return False
    nxt = size * (t.ne[0] // blck)
    for i in range(1, 4):
        if t.ne[i] != 1:
            if t.nb[i] != nxt:
                return False
            nxt *= t.ne[i]
    return True


def _nbytes(type_: str, ne: Shape, nb: Sequence[int]) -> int:
    """ggml_nbytes."""
    if min(ne) <= 0:
        return 0
    size, blck = _type(type_)
    if blck == 1:
        n = size
        for i in range(4):
            n += (ne[i] - 1) * nb[i]
        return n
    n = ne[0] * nb[0] // blck
    for i in range(1, 4):
        n += (ne[i] - 1) * nb[i]
    return n


def _pad4(ne: Sequence[int]) -> Shape:
    a = list(ne) + [1] * (4 - len(ne))
    return (a[0], a[1], a[2], a[3])


def new(
    type_: str,
    ne: Sequence[int],
    op: str = "NONE",
    srcs: Sequence[Tensor | None] = (),
    name: str = "",
    external: bool = False,
) -> Tensor:
    """ggml_new_tensor: contiguous."""
    shape = _pad4(ne)
    nb = _contiguous(type_, shape)
    return Tensor(op, type_, shape, nb, _nbytes(type_, shape, nb), tuple(srcs), None, external, 0, name)


def weight(type_: str, ne: Sequence[int], name: str = "") -> Tensor:
    """A model tensor: its memory is the model buffer's, never the compute buffer's."""
    return new(type_, ne, name=name, external=True)


def inp(type_: str, ne: Sequence[int], name: str = "") -> Tensor:
    """ggml_new_tensor + ggml_set_input."""
    t = new(type_, ne, name=name)
    t.flags |= FLAG_INPUT
    return t


def set_output(t: Tensor) -> Tensor:
    t.flags |= FLAG_OUTPUT
    return t


def _root(a: Tensor, offset: int) -> tuple[Tensor, int]:
    return (a.view_src, offset + a.view_offs) if a.view_src is not None else (a, offset)


def view_of(
    a: Tensor,
    op: str,
    type_: str,
    ne: Sequence[int],
    nb: Sequence[int] | None,
    offset: int,
    srcs: Sequence[Tensor | None],
    name: str = "",
) -> Tensor:
    """ggml_new_tensor_impl with a view source (chained views point at the root, offsets added)."""
    shape = _pad4(ne)
    strides = tuple(nb) if nb is not None else _contiguous(type_, shape)
    src, offs = _root(a, offset)
    t = Tensor(op, type_, shape, (strides[0], strides[1], strides[2], strides[3]), 0, tuple(srcs), src, False, 0, name)
    t.nbytes = _nbytes(type_, shape, t.nb)
    t.view_offs = offs
    return t


def dup(a: Tensor, op: str, srcs: Sequence[Tensor | None], name: str = "") -> Tensor:
    """ggml_dup_tensor(a) as the result of `op`."""
    return new(a.type, a.ne, op, srcs, name)


# --- views


def view_tensor(a: Tensor, op: str, srcs: Sequence[Tensor | None]) -> Tensor:
    return view_of(a, op, a.type, a.ne, a.nb, 0, srcs, a.name + " (view)")


def reshape(a: Tensor, *ne: int) -> Tensor:
    return view_of(a, "RESHAPE", a.type, ne, None, 0, (a,), a.name + " (reshaped)")


def view(a: Tensor, ne: Sequence[int], nb: Sequence[int], offset: int) -> Tensor:
    """ggml_view_1d..4d: `nb` are nb1.. (nb0 is the type's size); missing ones follow the last given."""
    shape = _pad4(ne)
    size, _blck = _type(a.type)
    strides = [size, *nb]
    while len(strides) < 4:
        k = len(strides)
        strides.append(strides[k - 1] * shape[k - 1])
    if len(ne) == 1:
        strides = list(_contiguous(a.type, shape))
    return view_of(a, "VIEW", a.type, shape, strides, offset, (a,), a.name + " (view)")


def permute(a: Tensor, a0: int, a1: int, a2: int, a3: int) -> Tensor:
    ne = [0, 0, 0, 0]
    nb = [0, 0, 0, 0]
    for src_axis, dst in enumerate((a0, a1, a2, a3)):
        ne[dst] = a.ne[src_axis]
        nb[dst] = a.nb[src_axis]
    return view_of(a, "PERMUTE", a.type, ne, nb, 0, (a,), a.name + " (permuted)")


def transpose(a: Tensor) -> Tensor:
    ne = (a.ne[1], a.ne[0], a.ne[2], a.ne[3])
    nb = (a.nb[1], a.nb[0], a.nb[2], a.nb[3])
    return view_of(a, "TRANSPOSE", a.type, ne, nb, 0, (a,), a.name + " (transposed)")


# --- ops


def cont(a: Tensor, *ne: int) -> Tensor:
    """ggml_cont / ggml_cont_Nd."""
    return new(a.type, ne or a.ne, "CONT", (a,), a.name + " (cont)")


def mul_mat(a: Tensor, b: Tensor) -> Tensor:
    return new("f32", (a.ne[1], b.ne[1], b.ne[2], b.ne[3]), "MUL_MAT", (a, b), a.name)


def mul_mat_id(as_: Tensor, b: Tensor, ids: Tensor) -> Tensor:
    return new("f32", (as_.ne[1], ids.ne[0], b.ne[2], 1), "MUL_MAT_ID", (as_, b, ids), as_.name)


def get_rows(a: Tensor, b: Tensor) -> Tensor:
    type_ = "i32" if a.type == "i32" else "f32"
    return new(type_, (a.ne[0], b.ne[0], b.ne[1], b.ne[2]), "GET_ROWS", (a, b))


def set_rows(a: Tensor, b: Tensor, c: Tensor) -> Tensor:
    return view_tensor(a, "SET_ROWS", (b, c, a))


def cpy(a: Tensor, b: Tensor) -> Tensor:
    return view_tensor(b, "CPY", (a, b))


def cast(a: Tensor, type_: str) -> Tensor:
    t = new(type_, a.ne, "CPY", (a,), a.name + " (copy)")
    t.srcs = (a, t)  # ggml_cast: src[1] is the result itself
    return t


def unary(a: Tensor, op: str = "UNARY", kind: str = "") -> Tensor:
    """ggml_norm, ggml_rms_norm, ggml_scale, ggml_silu, ggml_gelu, ...: a result shaped as `a` (`kind`: the unary
    function where a backend's rules read it, "sigmoid")."""
    t = dup(a, op, (a,))
    t.param = kind
    return t


def binary(op: str, a: Tensor, b: Tensor) -> Tensor:
    """ggml_add / ggml_mul / ggml_sub / ggml_div (not in place): shaped as `a` (a bias or scale keeps a's
    role)."""
    return dup(a, op, (a, b), a.name if b.external else "")


def rope(a: Tensor, pos: Tensor, factors: Tensor | None) -> Tensor:
    return dup(a, "ROPE", (a, pos, factors) if factors is not None else (a, pos))


def soft_max(a: Tensor, mask: Tensor | None, sinks: Tensor | None = None, scaled: bool = False) -> Tensor:
    """ggml_soft_max (`scaled`: ggml_soft_max_ext with a scale or ALiBi bias)."""
    srcs: tuple[Tensor | None, ...] = (a, mask) if sinks is None else (a, mask, sinks)
    while srcs and srcs[-1] is None:
        srcs = srcs[:-1]
    t = dup(a, "SOFT_MAX", srcs, a.name)
    t.param = "scaled" if scaled else ""
    return t


def flash_attn_ext(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, sinks: Tensor | None = None) -> Tensor:
    srcs: tuple[Tensor | None, ...] = (q, k, v, mask) if sinks is None else (q, k, v, mask, sinks)
    while srcs and srcs[-1] is None:
        srcs = srcs[:-1]
    return new("f32", (v.ne[0], q.ne[2], q.ne[1], q.ne[3]), "FLASH_ATTN_EXT", srcs, "attention")


def glu_split(a: Tensor, b: Tensor) -> Tensor:
    """ggml_swiglu_split / ggml_geglu_split: shaped as `a`."""
    return new(a.type, a.ne, "GLU", (a, b), "ffn")


def glu(a: Tensor) -> Tensor:
    """ggml_swiglu / ggml_geglu (one tensor, halves)."""
    return new(a.type, (a.ne[0] // 2, a.ne[1], a.ne[2], a.ne[3]), "GLU", (a,))


def concat(a: Tensor, b: Tensor, dim: int) -> Tensor:
    ne = list(a.ne)
    ne[dim] += b.ne[dim]
    return new(a.type, ne, "CONCAT", (a, b))


class Graph:
    """A ggml_cgraph being built: leafs and nodes in ggml_visit_parents_graph's order."""

    def __init__(self) -> None:
        self.leafs: list[Tensor] = []
        self.nodes: list[Tensor] = []
        self._seen: set[int] = set()

    def expand(self, t: Tensor) -> None:
        """ggml_build_forward_expand (iterative, for deep graphs)."""
        seen = self._seen
        if id(t) in seen:
            return
        stack: list[tuple[Tensor, int]] = [(t, 0)]
        seen.add(id(t))
        while stack:
            node, i = stack[-1]
            srcs = node.srcs
            while i < len(srcs):
                s = srcs[i]
                i += 1
                if s is not None and id(s) not in seen:
                    seen.add(id(s))
                    stack[-1] = (node, i)
                    stack.append((s, 0))
                    break
            else:
                stack.pop()
                (self.leafs if node.op == "NONE" else self.nodes).append(node)


def argsort_top_k(a: Tensor, k: int) -> Tensor:
    """ggml_argsort (i32, shaped as `a`) viewed to its first k columns."""
    s = new("i32", a.ne, "ARGSORT", (a,))
    return view(s, (k, s.ne[1], s.ne[2], s.ne[3]), (s.nb[1], s.nb[2], s.nb[3]), 0)


def sum_rows(a: Tensor) -> Tensor:
    return new(a.type, (1, a.ne[1], a.ne[2], a.ne[3]), "SUM_ROWS", (a,))


def pad(a: Tensor, ne0: int) -> Tensor:
    """ggml_pad along the first dimension: a new tensor ne0 wide."""
    return new(a.type, (ne0, a.ne[1], a.ne[2], a.ne[3]), "PAD", (a,))


def mean(a: Tensor) -> Tensor:
    """ggml_mean: f32, one value per row."""
    return new("f32", (1, a.ne[1], a.ne[2], a.ne[3]), "MEAN", (a,))


def repeat(a: Tensor, *ne: int) -> Tensor:
    return new(a.type, ne, "REPEAT", (a,))


def add_id(a: Tensor, b: Tensor, ids: Tensor) -> Tensor:
    return dup(a, "ADD_ID", (a, b, ids))


def argsort(a: Tensor) -> Tensor:
    """ggml_argsort: i32, shaped as `a`."""
    return new("i32", a.ne, "ARGSORT", (a,))


def arange(n: int) -> Tensor:
    """ggml_arange: f32 [n], computed (no source)."""
    return new("f32", (n,), "ARANGE", ())


def fill(a: Tensor) -> Tensor:
    """ggml_fill (not in place): shaped as `a`."""
    return dup(a, "FILL", (a,))


def add_inplace(a: Tensor, b: Tensor) -> Tensor:
    """ggml_add_inplace: an ADD op viewing `a`."""
    return view_tensor(a, "ADD", (a, b))


def pool_2d_blocks(a: Tensor, k0: int) -> Tensor:
    """ggml_pool_2d(a, GGML_OP_POOL_MAX, k0, 1, k0, 1, 0, 0): f32, ne0 pooled in windows of k0."""
    return new("f32", ((a.ne[0] - k0) // k0 + 1, a.ne[1], a.ne[2], a.ne[3]), "POOL_2D", (a,))


def top_k(a: Tensor, k: int) -> Tensor:
    """ggml_top_k: the indices of the k largest of each row, i32."""
    return new("i32", (k, a.ne[1], a.ne[2], a.ne[3]), "TOP_K", (a,))


def scale_inplace(a: Tensor) -> Tensor:
    """ggml_scale_inplace: a SCALE op viewing `a`."""
    return view_tensor(a, "SCALE", (a,))


def ssm_conv(sx: Tensor, c: Tensor) -> Tensor:
    """ggml_ssm_conv: f32 [d_inner, n_t, n_s], n_t = sx.ne0 - d_conv + 1."""
    return new("f32", (c.ne[1], sx.ne[0] - c.ne[0] + 1, sx.ne[2]), "SSM_CONV", (sx, c))


def gated_delta_net(q: Tensor, k: Tensor, v: Tensor, g: Tensor, beta: Tensor, state: Tensor, snapshots: int) -> Tensor:
    """ggml_gated_delta_net: f32 [S_v * H, n_tokens * n_seqs + K * S_v * n_seqs] (the output, then the states)."""
    s_v, heads, n_tokens, n_seqs = v.ne
    rows = n_tokens * n_seqs + snapshots * s_v * n_seqs
    return new("f32", (s_v * heads, rows), "GATED_DELTA_NET", (q, k, v, g, beta, state))


def ssm_scan(s: Tensor, x: Tensor, dt: Tensor, a: Tensor, b: Tensor, c: Tensor, ids: Tensor, snapshots: int) -> Tensor:
    """ggml_ssm_scan: f32, one row of y (x's elements) then K final states per sequence."""
    n = x.ne[0] * x.ne[1] * x.ne[2] * x.ne[3] + snapshots * s.ne[0] * s.ne[1] * s.ne[2] * ids.ne[0]
    return new("f32", (n,), "SSM_SCAN", (s, x, dt, a, b, c, ids))
