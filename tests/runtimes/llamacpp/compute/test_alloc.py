"""The port of ggml's graph allocator on hand-worked graphs (each number worked out from ggml-alloc.c's rules)."""

from __future__ import annotations

from kvplan.runtimes.llamacpp.compute import ggml
from kvplan.runtimes.llamacpp.compute.alloc import DynAllocator, GraphAllocator
from kvplan.runtimes.llamacpp.compute.ggml import Graph


def _size(out: ggml.Tensor) -> int:
    g = Graph()
    g.expand(out)
    return GraphAllocator().reserve(g.leafs, g.nodes)[0]


def test_sizes_are_aligned_to_32_bytes() -> None:
    a = DynAllocator(32)
    assert a.alloc(1) == (0, 0)
    assert a.alloc(40) == (0, 32)
    assert a.size == 32 + 64


def test_best_fit_takes_the_smallest_free_block_that_holds_it() -> None:
    a = DynAllocator(32)
    offs = [a.alloc(n)[1] for n in (64, 32, 128, 32)]  # 0, 64, 96, 224
    a.free(0, offs[0], 64)
    a.free(0, offs[2], 128)
    assert a.alloc(32) == (0, 0)  # the 64-byte hole at 0 is smaller than the 128-byte one
    assert a.alloc(100) == (0, 96)  # the 128-byte hole
    assert a.size == 256


def test_an_op_that_can_run_in_place_takes_its_parents_memory() -> None:
    x = ggml.inp("f32", (1024,))  # 4 KiB input: its one child may take it over
    w = ggml.weight("f32", (1024,))
    y = ggml.binary("ADD", ggml.unary(x, "RMS_NORM"), w)  # RMS_NORM takes x's memory, ADD the norm's
    assert _size(y) == 4096


def test_an_op_that_cannot_run_in_place_needs_new_memory() -> None:
    x = ggml.inp("f32", (1024,))
    y = ggml.cont(ggml.unary(x, "RMS_NORM"))  # the norm takes x's memory; CONT is not in ggml_op_can_inplace
    assert _size(y) == 2 * 4096


def test_a_graph_output_is_never_reused() -> None:
    x = ggml.inp("f32", (1024,))
    n = ggml.set_output(ggml.unary(x, "RMS_NORM"))
    y = ggml.binary("ADD", n, ggml.weight("f32", (1024,)))  # may not take the output's memory
    assert _size(y) == 2 * 4096


def test_freed_memory_is_reused_by_later_tensors() -> None:
    x = ggml.inp("f32", (256,))  # 1 KiB at 0
    w = ggml.weight("f32", (256, 4096))
    big = ggml.mul_mat(w, x)  # 16 KiB at 1024; x is freed after it: a 1 KiB hole at 0
    small = ggml.mul_mat(ggml.weight("f32", (4096, 256)), big)  # 1 KiB: best fit, the hole at 0; big is freed
    big2 = ggml.mul_mat(w, small)  # 16 KiB again, where big was
    assert _size(big2) == 1024 + 16384
