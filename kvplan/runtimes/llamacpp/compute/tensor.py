"""The part of a ggml tensor that ggml's graph allocator reads: op, type, shape, strides, flags, view source and
sources. Shapes and strides follow ggml.c's constructors (ggml_new_tensor_impl, ggml_view_*, ggml_reshape_*,
ggml_permute, ggml_transpose, ggml_cont); the ops in ops.py build them as llama.cpp's graph code calls them."""

from __future__ import annotations

from dataclasses import dataclass, field

FLAG_INPUT = 1
FLAG_OUTPUT = 2

#: what a tensor with memory of its own is (ggml_backend_buffer_usage): a model weight or a cache
USAGE_WEIGHTS = 1
USAGE_CACHE = 2
#: the layer of the input layer's tensors (the token embeddings) and of the output layer's
INPUT_LAYER = -1
OUTPUT_LAYER = -2
#: a pin: the node runs on the CPU when the KV cache stays in host memory (-nkvo: build_attn_mha)
PIN_CPU_WITHOUT_KV_OFFLOAD = -3

#: the layer being built (GraphContext sets it): every tensor records the layer it was made in (`born`)
_BUILDING = [INPUT_LAYER]


def set_building(il: int) -> None:
    _BUILDING[0] = il


def _building() -> int:
    return _BUILDING[0]


#: ggml_op_can_inplace (ggml-alloc.c): ops whose result may take over a source's memory
INPLACE_OPS = frozenset(
    {
        "FILL",
        "SCALE",
        "DIAG_MASK_ZERO",
        "DIAG_MASK_INF",
        "ADD",
        "ADD_ID",
        "ADD1",
        "SUB",
        "MUL",
        "DIV",
        "SQR",
        "SQRT",
        "LOG",
        "UNARY",
        "ROPE",
        "ROPE_BACK",
        "SILU_BACK",
        "RMS_NORM",
        "RMS_NORM_BACK",
        "CLAMP",
        "SOFT_MAX",
        "SOFT_MAX_BACK",
    }
)


@dataclass(eq=False, slots=True)
class Tensor:
    """One ggml tensor as the allocator sees it. `external`: its memory is not the compute buffer's (weights, the
    KV cache, anything with a buffer of its own); `view_src`: the tensor whose memory this one views."""

    op: str
    type: str
    ne: tuple[int, int, int, int]
    nb: tuple[int, int, int, int]
    nbytes: int
    srcs: tuple[Tensor | None, ...] = ()
    view_src: Tensor | None = None
    external: bool = False
    flags: int = 0
    name: str = ""
    view_offs: int = 0
    # where the scheduler finds it: for a tensor with memory of its own, its usage and layer (the placement puts
    # the layer's weights and cache on a device); for a node llama.cpp assigns a backend to (the callback's
    # ggml_backend_sched_set_tensor_backend), the layer whose device it is pinned to
    usage: int = 0
    layer: int = INPUT_LAYER
    pin: int | None = None
    #: an op's parameter where a backend's rules read it: a UNARY's function ("sigmoid"), a SOFT_MAX's "scaled"
    #: (a scale or ALiBi bias other than ggml_soft_max's 1 and 0)
    param: str = ""
    #: the layer being built when the tensor was made (layers.py compares the layers' graphs by it)
    born: int = field(default_factory=_building)
    # the graph allocator's state for this tensor (ggml-alloc.c's hash_node), reset by each reserve
    n_children: int = 0
    n_views: int = 0
    allocated: bool = False
    buffer: int = 0
    chunk: int = 0
    offset: int = 0

    @property
    def is_view(self) -> bool:
        return self.view_src is not None

    def same_layout(self, other: Tensor) -> bool:
        """ggml_are_same_layout."""
        return self.type == other.type and self.ne == other.ne and self.nb == other.nb
