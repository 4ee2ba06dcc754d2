"""What ggml's CUDA backend adds to the scheduler's graph copy (ggml-cuda.cu, llama.cpp 2026-10-01): the allocation
dependencies of ggml_backend_cuda_graph_optimize. For two fusions it will run, that function asks the scheduler to
keep tensors alive longer (add_alloc_dep: `tensor` stays allocated until `until` is computed; the scheduler puts a
GGML_OP_NONE node after `until` whose sources are the kept tensors), so the fused kernel can read them:

- the MoE weighted reduction (ggml_cuda_match_moe_weighted_reduction): experts × router weights (× an expert
  scale), its per-expert views and the adds over them — the experts' output, the weights and the scale are kept
  until the last add;
- top-k MoE routing (ggml_cuda_topk_moe_fusion, ggml_can_fuse_subgraph, ggml_cuda_should_use_topk_moe): softmax or
  sigmoid gating, the probabilities' reshape, the bias add, the top-k argsort and its view, the weights' get_rows,
  their normalisation and scale — every one of those nodes and its sources is kept until the node after them.

A node's uses are counted over the whole graph as ggml_visit_parents_graph counts them (cgraph->use_counts)."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping, Sequence

from kvplan.runtimes.llamacpp.compute.ggml import is_contiguous
from kvplan.runtimes.llamacpp.compute.tensor import FLAG_OUTPUT, USAGE_WEIGHTS, Tensor

#: MOE_WEIGHTED_REDUCTION_MAX_EXPERTS
_MAX_EXPERTS_REDUCED = 15

Srcs = Callable[[Tensor], tuple[Tensor | None, ...]]


def use_counts(nodes: Sequence[Tensor]) -> dict[int, int]:
    """cgraph->use_counts: how many source slots of the graph's nodes name each tensor."""
    counts: dict[int, int] = {}
    for n in nodes:
        for s in n.srcs:
            if s is not None:
                counts[id(s)] = counts.get(id(s), 0) + 1
    return counts


def _src(srcs: Srcs, t: Tensor, i: int) -> Tensor | None:
    s = srcs(t)
    return s[i] if i < len(s) else None


def _can_fuse(
    nodes: Sequence[Tensor], start: int, count: int, ops: Sequence[str], outputs: Sequence[int],
    uses: Mapping[int, int], srcs: Srcs,
) -> bool:  # fmt: skip
    """ggml_can_fuse_subgraph: the ops match, and every node but the outputs is used only inside the subgraph, is
    no graph output, and views only tensors of the subgraph or weights."""
    if start + count > len(nodes):
        return False
    sub = nodes[start : start + count]
    if any(node.op != op for node, op in zip(sub, ops, strict=True)):
        return False
    ids = {id(n) for n in sub}
    inside: dict[int, int] = {}  # uses by the subgraph's nodes (a node's users all come after it)
    for node in sub:
        for s in srcs(node):
            if s is not None:
                inside[id(s)] = inside.get(id(s), 0) + 1
    for i, node in enumerate(sub):
        if start + i in outputs:
            continue
        if node.flags & FLAG_OUTPUT or inside.get(id(node), 0) != uses.get(id(node), 0):
            return False
        vs = node.view_src
        if vs is not None and id(vs) not in ids and not (vs.external and vs.usage == USAGE_WEIGHTS):
            return False
    return True


def _split_mul(mul: Tensor, srcs: Srcs) -> tuple[Tensor, Tensor] | None:
    """split_mul: (the full f32 operand shaped as the product, the f32 column broadcast over it), either order."""
    a, b = _src(srcs, mul, 0), _src(srcs, mul, 1)

    def weights(t: Tensor | None) -> bool:
        return t is not None and t.type == "f32" and is_contiguous(t) and t.ne[0] == 1 and t.ne[1:] == mul.ne[1:]

    def experts(t: Tensor | None) -> bool:
        return t is not None and t.type == "f32" and is_contiguous(t) and t.ne == mul.ne

    if experts(a) and weights(b):
        return a, b  # type: ignore[return-value]
    if experts(b) and weights(a):
        return b, a  # type: ignore[return-value]
    return None


def _reduction_chain(nodes: Sequence[Tensor], i: int, first: int, count: int, weighted: Tensor, srcs: Srcs) -> bool:
    """The n_used views of `weighted` (one per expert, in order), then the adds summing them left to right."""
    n_used, n_tokens = weighted.ne[1], weighted.ne[2] * weighted.ne[3]
    views: list[Tensor] = []
    sums: list[Tensor] = []  # the adds so far
    for c in nodes[i + first : i + count]:
        if c.op == "VIEW":
            if (
                len(views) >= n_used
                or _src(srcs, c, 0) is not weighted
                or c.view_src is not weighted
                or c.type != "f32"
                or c.ne != (weighted.ne[0], n_tokens, 1, 1)
                or (c.nb[0], c.nb[1]) != (weighted.nb[0], weighted.nb[2])
                or c.view_offs != len(views) * weighted.nb[1]
            ):
                return False
            views.append(c)
        else:
            if c.op != "ADD" or len(views) < 2 or len(sums) + 1 >= len(views) or c.type != "f32":
                return False
            if _src(srcs, c, 0) is not (sums[-1] if sums else views[0]) or _src(srcs, c, 1) is not views[len(sums) + 1]:
                return False
            sums.append(c)
    if len(views) != n_used or len(sums) != n_used - 1:
        return False
    return is_contiguous(sums[-1]) and sums[-1].ne == (weighted.ne[0], n_tokens, 1, 1)


def _weighted_reduction(
    nodes: Sequence[Tensor], i: int, uses: Mapping[int, int], srcs: Srcs
) -> tuple[int, Tensor, list[Tensor]] | None:
    """ggml_cuda_match_moe_weighted_reduction: (node count, the last add, the tensors kept until it)."""
    first = nodes[i]
    if first.op != "MUL" or i + 1 >= len(nodes) or nodes[i + 1].op not in ("MUL", "VIEW"):
        return None  # (a view of the product, or the second product, comes next: else nothing to match)
    if first.type != "f32" or not is_contiguous(first):
        return None
    weighted, kept, mul_count = first, [], 1
    if i + 1 < len(nodes):  # (experts × expert scale) × router weights
        second = nodes[i + 1]
        if second.op == "MUL" and second.type == "f32" and is_contiguous(second):
            outer, inner = _split_mul(second, srcs), _split_mul(first, srcs)
            if outer is not None and outer[0] is first and inner is not None:
                weighted, kept, mul_count = second, [inner[0], outer[1], inner[1]], 2  # experts, weights, scale
    if not kept:
        found = _split_mul(first, srcs)
        if found is None:
            return None
        kept = [found[0], found[1]]
    n_used, n_tokens = weighted.ne[1], weighted.ne[2] * weighted.ne[3]
    if n_used < 2 or n_used > _MAX_EXPERTS_REDUCED or n_tokens <= 0:
        return None
    count = 2 * n_used + mul_count - 1
    if i + count > len(nodes) or not _reduction_chain(nodes, i, mul_count, count, weighted, srcs):
        return None
    ops = ["MUL"] * mul_count + [n.op for n in nodes[i + mul_count : i + count]]
    if not _can_fuse(nodes, i, count, ops, (i + count - 1,), uses, srcs):
        return None
    return count, nodes[i + count - 1], kept


def _topk_moe_ops(nodes: Sequence[Tensor], i: int, srcs: Srcs) -> tuple[list[str], int] | None:  # noqa: C901 - the C++ matcher's steps, in its order
    """ggml_cuda_topk_moe_fusion for the gating forms graph_optimize fuses (softmax or sigmoid first; a delayed
    softmax is left alone): the fused ops and the index of the selected experts' ids."""
    n = len(nodes)
    node = nodes[i]
    if node.op == "SOFT_MAX":
        ops = ["SOFT_MAX"]
    elif node.op == "UNARY" and node.param == "sigmoid":
        ops = ["UNARY"]
    else:  # (softplus → sqrt is DeepSeek-V4's, whose graph kvplan does not build; an argsort first is delayed)
        return None
    k = i + 1

    def at(j: int, op: str, src0: Tensor | None) -> bool:
        return j < n and nodes[j].op == op and _src(srcs, nodes[j], 0) is src0

    if not at(k, "RESHAPE", nodes[k - 1]):
        return None
    probs_reshaped = nodes[k]
    k += 1
    if k >= n:
        return None
    bias = nodes[k].op == "ADD" and _src(srcs, nodes[k], 0) is nodes[k - 2]
    if bias:
        k += 1
    if not at(k, "ARGSORT", nodes[k - 1] if bias else nodes[k - 2]):
        return None
    k += 1
    if not at(k, "VIEW", nodes[k - 1]):
        return None
    ids_at = k
    k += 1
    if not at(k, "GET_ROWS", probs_reshaped) or _src(srcs, nodes[k], 1) is not nodes[k - 1]:
        return None
    k += 1
    ops += ["RESHAPE", "ADD", "ARGSORT", "VIEW", "GET_ROWS"] if bias else ["RESHAPE", "ARGSORT", "VIEW", "GET_ROWS"]
    if k < n and nodes[k].op == "RESHAPE":
        if (
            at(k, "RESHAPE", nodes[k - 1])
            and at(k + 1, "SUM_ROWS", nodes[k])
            and at(k + 2, "CLAMP", nodes[k + 1])
            and k + 3 < n
            and nodes[k + 3].op == "DIV"
            and _src(srcs, nodes[k + 3], 1) is nodes[k + 2]
            and _src(srcs, nodes[k + 3], 0) is nodes[k]
            and at(k + 4, "RESHAPE", nodes[k + 3])
        ):
            ops += ["RESHAPE", "SUM_ROWS", "CLAMP", "DIV", "RESHAPE"]
            k += 5
        else:
            return ops, ids_at
    if at(k, "SCALE", nodes[k - 1]):
        ops.append("SCALE")
    return ops, ids_at


def _should_use_topk_moe(gating: Tensor, logits: Tensor | None, weights: Tensor, ids: Tensor, srcs: Srcs) -> bool:
    """ggml_cuda_should_use_topk_moe: an expert count the kernel is built for, contiguous tensors, a plain
    softmax (no scale, bias, mask or sinks) or a sigmoid."""
    n_expert = ids.nb[1] // ids.nb[0]
    if (n_expert & (n_expert - 1) or n_expert > 512) and n_expert not in (288, 576):
        return False
    if logits is None or not is_contiguous(weights) or not is_contiguous(logits):
        return False
    if gating.op == "SOFT_MAX":
        s = srcs(gating)
        return is_contiguous(logits) and gating.param == "" and len(s) < 2
    return True


#: the ops a fusion can start at: the weighted sum's first MUL, top-k routing's gating (an ARGSORT first is the
#: delayed softmax, which graph_optimize leaves alone)
_FIRST_OPS = frozenset({"MUL", "UNARY", "SOFT_MAX"})


def candidates(nodes: Sequence[Tensor]) -> list[int]:
    """The indices of the nodes a fusion can start at (one list per graph: the splits only cut it)."""
    return [i for i, n in enumerate(nodes) if n.op in _FIRST_OPS]


def alloc_deps(  # noqa: C901 - graph_optimize's loop over both fusions, in its order
    nodes: Sequence[Tensor], start: int, end: int, uses: Mapping[int, int], srcs: Srcs, starts: Sequence[int]
) -> dict[int, list[Tensor]]:
    """ggml_backend_cuda_graph_optimize's allocation dependencies over one split (nodes[start:end]; `starts`:
    candidates(nodes)): for each `until` node (by id), the tensors kept alive until it is computed, in the order
    they were added. A matched fusion's nodes are skipped, as graph_optimize's loop skips them."""
    lo, hi = bisect.bisect_left(starts, start), bisect.bisect_left(starts, end)
    if lo == hi:
        return {}
    split = nodes[start:end]
    deps: dict[int, dict[int, Tensor]] = {}  # until → kept tensors by id, in the order added (each once)

    def add(t: Tensor | None, until: Tensor) -> None:
        if t is not None:
            deps.setdefault(id(until), {}).setdefault(id(t), t)

    after = 0  # the first index past the last fusion matched
    for at in starts[lo:hi]:
        i = at - start
        if i < after:
            continue
        found = _weighted_reduction(split, i, uses, srcs)
        if found is not None:
            count, dst, kept = found
            for t in kept:
                add(t, dst)
            after = i + count
            continue  # (the loop's next look is at the last add: no fusion starts there)
        fused = _topk_moe_ops(split, i, srcs)
        if fused is None:
            continue
        ops, ids_at = fused
        last = i + len(ops) - 1
        node = split[i]
        if _can_fuse(split, i, len(ops), ops, (ids_at, last), uses, srcs) and _should_use_topk_moe(
            node, _src(srcs, node, 0), split[last], split[ids_at], srcs
        ):
            until_at = start + i + len(ops)
            if until_at < len(nodes):
                until = nodes[until_at]
                for t in split[i : i + len(ops)]:
                    add(t, until)
                    for src in srcs(t):
                        add(src, until)
            after = i + len(ops)
    return {until: list(kept.values()) for until, kept in deps.items()}
