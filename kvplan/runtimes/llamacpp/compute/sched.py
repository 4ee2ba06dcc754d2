"""A port of ggml's backend scheduler (ggml/src/ggml-backend.cpp, llama.cpp 2026-10-01) as far as the compute
buffers depend on it: ggml_backend_sched_split_graph assigns every node of llama.cpp's graph to a backend (pass 1:
where its weights or its memory are, inputs on the CPU; pass 2: GPU backends expanded down and up over the nodes
between, then any backend; pass 3: higher-priority backends of the same buffer type, unassigned nodes to the
backend with the most supported inputs; pass 4: sources from their users and views from their sources), splits it
where the backend changes, and copies each input of a split that lives in a buffer its backend cannot read into
that backend's compute buffer (with pipeline parallelism, n_copies of each, and of every graph input); the graph
copy it hands to ggml's allocator (ggml_gallocr_reserve_n) puts each split's input copies before its nodes. Each
backend's compute buffer is then what the allocator reserves in that backend's buffer type.

The backends are the devices in llama.cpp's order (model.devices), then the CPU, last (llama_context's
constructor). llama.cpp's graph callback (llama_context::graph_get_cb) pins each layer's norms to the layer's
device when every layer is offloaded or the batch is under 32 tokens; build_attn_mha pins the attention output
to the CPU under -nkvo. The backend rules here are those of the CPU backend and of ggml's RPC backend (every op
supported, no op offload, a device reads only its own buffers: the devices of llama-fit-params's oracle); other
GPU backends differ in which ops they support and offload (not ported yet)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kvplan.facts.ggml_types import (
    CUDA_BUFFER_ALIGNMENT,
    METAL_BUFFER_ALIGNMENT,
    VULKAN_BUFFER_ALIGNMENT,
    VULKAN_MAX_BUFFER_SIZE,
)
from kvplan.runtimes.llamacpp.compute.alloc import CPU, SIZE_MAX, BufferType, GraphAllocator
from kvplan.runtimes.llamacpp.compute.cuda import alloc_deps, candidates, use_counts
from kvplan.runtimes.llamacpp.compute.ggml import Graph
from kvplan.runtimes.llamacpp.compute.tensor import (
    FLAG_INPUT,
    FLAG_OUTPUT,
    INPUT_LAYER,
    OUTPUT_LAYER,
    PIN_CPU_WITHOUT_KV_OFFLOAD,
    USAGE_CACHE,
    USAGE_WEIGHTS,
    Tensor,
)
from kvplan.runtimes.llamacpp.plan import Backend

if TYPE_CHECKING:
    from kvplan.runtimes.llamacpp.compute.layers import Probe
    from kvplan.runtimes.llamacpp.pattern import Pattern

#: GGML_SCHED_MAX_COPIES: the copies of each input with pipeline parallelism
MAX_COPIES = 4
GGML_MAX_SRC = 10
_VIEW_OPS = frozenset({"VIEW", "RESHAPE", "PERMUTE", "TRANSPOSE"})
#: ops whose weights do not choose their backend (ggml_backend_sched_backend_id_from_cur)
_NOT_BY_WEIGHT = frozenset({"ROPE", "FLASH_ATTN_EXT"})
HOST = -1  # a placement's device index for host memory (the CPU backend)


@dataclass(frozen=True)
class DeviceRules:
    """How a device backend differs from the CPU's rules, as far as its compute buffer tells: its buffer
    alignment, whether it takes over ops on weights in host memory (op offload: ggml_backend_offload_op, a batch
    of at least `offload_min_batch` rows), and its allocation sizes. `recorded`: proven against llama.cpp here
    (the RPC devices of the oracle); else read from the backend's source."""

    name: str
    alignment: int = 32
    offload_min_batch: int | None = None
    fa_f16_copies: bool = False
    #: its buffers pad quantized rows (CUDA's, facts.ggml_types.cuda_alloc_size)
    cuda_rows: bool = False
    #: its graph_optimize keeps the MoE fusions' tensors alive longer (cuda.py)
    fusion_deps: bool = False
    recorded: bool = False
    #: the ops it takes over from host memory (None: any; Metal's offload_op: the matrix products only)
    offload_ops: frozenset[str] | None = None
    #: its buffers' scratch beyond some ops' results (Metal's get_alloc_size: alloc.metal_alloc_size)
    metal_scratch: bool = False
    #: the largest buffer it allocates: a compute buffer is chunks of at most this (Vulkan's suballocation block)
    max_size: int = SIZE_MAX

    def buffer_type(self, i: int) -> BufferType:
        return BufferType(
            f"{self.name}{i}", self.alignment, self.max_size, fa_f16_copies=self.fa_f16_copies,
            cuda_rows=self.cuda_rows, metal_scratch=self.metal_scratch,
        )  # fmt: skip


#: a ggml RPC server's device (ggml-rpc.cpp): the CPU backend's buffers behind it, every op supported, no op offload
RPC = DeviceRules("RPC", 32, recorded=True)
#: ggml-cuda.cu (also HIP/ROCm, built from the same source): 128-byte buffers, op offload from 32 rows
#: (ggml_backend_cuda_device_offload_op, get_op_batch_size; GGML_OP_OFFLOAD_MIN_BATCH), the flash-attention
#: result's f16 K/V copies and quantized rows padded to 512 values (ggml_backend_cuda_buffer_type_get_alloc_size),
#: the MoE fusions' allocation dependencies (ggml_backend_cuda_graph_optimize: cuda.py). Recorded on an H200
#: (tests/fixtures/oracle/compute_cuda.json); HIP's build is not
CUDA = DeviceRules(
    "CUDA", CUDA_BUFFER_ALIGNMENT, 32, fa_f16_copies=True, cuda_rows=True, fusion_deps=True, recorded=True
)
#: HIP's build of ggml-cuda (ROCm): CUDA's rules, from the same source (its flash-attention kernel choice differs
#: by GPU, not its f16 copies for the prompt batch the compute buffer is sized for); not recorded
ROCM = DeviceRules("ROCm", CUDA_BUFFER_ALIGNMENT, 32, fa_f16_copies=True, cuda_rows=True, fusion_deps=True)
#: ggml-metal (Apple GPUs): 32-byte buffers (ggml_backend_metal_buffer_type_*_get_alignment), op offload of the
#: matrix products from 32 rows (ggml_backend_metal_device_offload_op, op_offload_min_batch_size), scratch for
#: flash attention, MoE products, sorts and top-k in the op's own allocation
#: (ggml_backend_metal_buffer_type_get_alloc_size); not recorded
METAL = DeviceRules("MTL", METAL_BUFFER_ALIGNMENT, 32, offload_ops=frozenset({"MUL_MAT", "MUL_MAT_ID"}),
                    metal_scratch=True)  # fmt: skip
#: ggml-vulkan: the device's storage-buffer alignment (VULKAN_BUFFER_ALIGNMENT), op offload from 32 rows
#: (ggml_backend_vk_device_offload_op with CUDA's batch sizes), buffers of at most the 1 GiB suballocation block
#: (ggml_backend_vk_buffer_type_get_max_size); not recorded
VULKAN = DeviceRules("Vulkan", VULKAN_BUFFER_ALIGNMENT, 32, max_size=VULKAN_MAX_BUFFER_SIZE)
#: each backend's device rules (the CPU backend's devices: the oracle's RPC servers)
RULES = {Backend.CPU: RPC, Backend.CUDA: CUDA, Backend.ROCM: ROCM, Backend.METAL: METAL, Backend.VULKAN: VULKAN}


def op_batch_size(t: Tensor) -> int:
    """get_op_batch_size (ggml-cuda.cu)."""
    if t.op == "GET_ROWS":
        return 0
    if t.op == "MUL_MAT":
        return t.ne[1]
    if t.op in ("MUL_MAT_ID", "ROPE", "ROPE_BACK"):
        return t.ne[2]
    return t.ne[1] * t.ne[2] * t.ne[3]


@dataclass(frozen=True)
class Placement:
    """Where llama.cpp's loader put each layer's weights and caches: `where[il]` the device of layer il (HOST for
    host memory; the last entry is the output layer's), `rules` the tensor buffer overrides (-ot and -ncmoe's
    patterns, first match wins: GGUF tensor name pattern → device), `kv_on_host` for -nkvo."""

    n_devices: int
    where: tuple[int, ...]
    rules: tuple[tuple[Pattern, int], ...] = ()
    kv_on_host: bool = False
    #: llama_context's pipeline parallelism: several devices, every layer offloaded, -sm layer, the KV offloaded,
    #: no tensor overrides (and every device with async compute and events, as the RPC and CUDA backends have)
    pipeline_parallel: bool = False
    #: the backends llama.cpp assigns while it builds the graph (the callback's norms, -nkvo's attention output)
    #: hold: so when a context allocates its buffers (ggml_backend_sched_reserve); the fit's no_alloc projection
    #: (ggml_backend_sched_reserve_size, common_get_device_memory_data) resets the scheduler first and loses them
    pins: bool = True

    def device_of_layer(self, il: int) -> int:
        if il == INPUT_LAYER:
            return HOST  # the input layer stays in host memory (llama_model::load_tensors: dev_input)
        return self.where[-1] if il == OUTPUT_LAYER else self.where[il]

    @property
    def full_offload(self) -> bool:
        """model.n_gpu_layers() > n_layer_all: the output layer (and so every layer) on a device."""
        return all(d != HOST for d in self.where)


_NAMES: dict[int, tuple[Graph, tuple[str, ...]]] = {}


def weight_names(g: Graph) -> tuple[str, ...]:
    """The GGUF names of a graph's weights, one tuple per graph (kept with the last few graphs)."""
    hit = _NAMES.get(id(g))
    if hit is not None and hit[0] is g:
        return hit[1]
    names = tuple(dict.fromkeys(gguf_name(t) for t in g.leafs if t.external and t.usage == USAGE_WEIGHTS))
    if len(_NAMES) >= 16:
        del _NAMES[next(iter(_NAMES))]
    _NAMES[id(g)] = (g, names)
    return names


def gguf_name(t: Tensor) -> str:
    """The tensor's name in the GGUF (blk.N.attn_q.weight, output.weight, token_embd.weight)."""
    name = t.name if t.name.endswith((".bias", ".scale")) else t.name + ".weight"
    return f"blk.{t.layer}.{name}" if t.layer >= 0 else name


@dataclass
class Split:
    """ggml_backend_sched_split: a run of nodes on one backend and the sources it copies in."""

    backend: int
    i_start: int
    i_end: int = 0
    inputs: list[Tensor] | None = None


@dataclass
class SplitGraph:
    """The scheduler's graph copy: nodes and leafs with their backends (the allocator's buffer ids), and the
    sources of the nodes whose inputs were copied (ggml rewrites node->src in place; here they are applied for
    the allocation and put back, so one graph serves every placement)."""

    nodes: list[Tensor]
    node_backends: list[int]
    leafs: list[Tensor]
    leaf_backends: list[int]
    new_srcs: dict[int, tuple[Tensor | None, ...]]


def _dup_layout(t: Tensor, name: str) -> Tensor:
    """ggml_dup_tensor_layout: a tensor of the same type, shape and strides, with memory of its own."""
    return Tensor("NONE", t.type, t.ne, t.nb, t.nbytes, name=name)


def _view_dep(t: Tensor) -> Tensor:
    """ggml_view_tensor(input) with src[0] = input: keeps the input alive until its copy is made."""
    root = t.view_src if t.view_src is not None else t
    return Tensor("NONE", t.type, t.ne, t.nb, t.nbytes, (t,), root, name=t.name + " (view)")


_SCANS: dict[int, tuple[list[Tensor], dict[int, int], list[int]]] = {}


def _fusion_scan(nodes: list[Tensor]) -> tuple[dict[int, int], list[int]]:
    """A graph's use counts and the nodes a CUDA fusion can start at (cuda.py), once per graph (kept with the last
    few; every split reads copies, so the matches themselves are found per placement)."""
    hit = _SCANS.get(id(nodes))
    if hit is not None and hit[0] is nodes:
        return hit[1], hit[2]
    if len(_SCANS) >= 16:
        del _SCANS[next(iter(_SCANS))]
    uses, starts = use_counts(nodes), candidates(nodes)
    _SCANS[id(nodes)] = (nodes, uses, starts)
    return uses, starts


def _keep_dep(keep: Sequence[Tensor]) -> Tensor:
    """ggml_view_tensor(keep[0]) with the kept tensors as sources (up to GGML_MAX_SRC): an op-less node after the
    `until` node, so that the allocator frees none of them before it."""
    t = keep[0]
    root = t.view_src if t.view_src is not None else t
    return Tensor("NONE", t.type, t.ne, t.nb, t.nbytes, tuple(keep), root, name=t.name + " (kept)")


class Scheduler:
    """ggml_backend_sched over one graph and placement: `reserve` gives each backend's compute buffer bytes
    (devices in order, then the CPU)."""

    def __init__(
        self,
        placement: Placement,
        n_tokens: int,
        rules: DeviceRules = RPC,
        weight_bytes: Mapping[str, int] | None = None,
        weight_extra: Mapping[str, int] | None = None,
    ) -> None:
        self.p = placement
        n = placement.n_devices
        self.n_backends = n + 1
        self.cpu = n  # the last backend: the CPU
        self.rules = rules
        #: the real bytes of the model's weights by GGUF name (a weight copied into a device's buffer under op
        #: offload is its bytes; the graph's weights are shapes only)
        self.weight_bytes = weight_bytes or {}
        #: what a device's buffer allocates beyond a weight's bytes, by GGUF name (CUDA's: TensorWeights.cuda_extra)
        self.weight_extra = weight_extra or {}
        # the CPU backend's buffer type: the host buffer of the first device where it has one (CUDA_Host), with
        # the CPU's alignment and sizes either way
        self.bufts = (*(rules.buffer_type(i) for i in range(n)), CPU)
        self.n_copies = MAX_COPIES if placement.pipeline_parallel else 1
        self.pin_norms = placement.pins and (n_tokens < 32 or placement.full_offload)
        self._home_cache: dict[int, int] = {}
        #: the overrides' destinations by GGUF name (set by split: over the graph's weights)
        self._moved: Mapping[str, int] = {}
        self.copy_of: dict[int, tuple[Tensor, Hashable]] = {}

    # --- where memory is

    def _backend_of_device(self, d: int) -> int:
        return self.cpu if d == HOST else d

    def home(self, t: Tensor) -> int:
        """The backend whose buffer holds a tensor with memory of its own (ggml_backend_sched_backend_from_buffer:
        the highest-priority backend that supports its buffer type — its device's, or the CPU for host memory)."""
        key = id(t)
        b = self._home_cache.get(key)
        if b is None:
            p = self.p
            if t.usage == USAGE_CACHE:
                d = HOST if p.kv_on_host else p.device_of_layer(t.layer)
            else:
                d = p.device_of_layer(t.layer)
                if p.rules:
                    d = self._moved.get(gguf_name(t), d)
            b = self._backend_of_device(d)
            self._home_cache[key] = b
        return b

    def _buft_of(self, t: Tensor, ids: dict[int, int]) -> int | None:
        """The backend whose buffer type holds t (allocated: its buffer's; else the backend assigned to it or to
        its view source); buffer types are one per backend here, so a backend index stands for one."""
        if t.external:
            return self.home(t)
        if t.view_src is not None and t.view_src.external:
            return self.home(t.view_src)
        b = ids.get(id(t), -1)
        if b == -1 and t.view_src is not None:
            b = ids.get(id(t.view_src), -1)
        return None if b == -1 else b

    def _supported(self, t: Tensor, backend: int, ids: dict[int, int]) -> bool:
        """ggml_backend_sched_buffer_supported: the backend can read t where it is (its own buffer type)."""
        b = self._buft_of(t, ids)
        return b is not None and self.bufts[b] == self.bufts[backend]

    def _from_cur(self, t: Tensor) -> int:
        """ggml_backend_sched_backend_id_from_cur."""
        if t.external:
            return self.home(t)
        vs = t.view_src
        if vs is not None and vs.external:
            return self.home(vs)
        if t.flags & FLAG_INPUT:
            return self.cpu
        if t.op not in _NOT_BY_WEIGHT:
            for src in t.srcs:
                if src is not None and src.external and src.usage == USAGE_WEIGHTS:
                    b = self.home(src)
                    # a weight in host memory: the first device that offloads the op takes it (op_offload)
                    m, ops = self.rules.offload_min_batch, self.rules.offload_ops
                    if (
                        b == self.cpu and m is not None and self.p.n_devices and (ops is None or t.op in ops)
                        and op_batch_size(t) >= m
                    ):  # fmt: skip
                        return 0
                    return b
        return -1

    # --- ggml_backend_sched_split_graph

    def split(self, g: Graph) -> SplitGraph:
        """ggml_backend_sched_split_graph: every tensor's backend, the splits and the graph copy."""
        if self.p.rules:
            from kvplan.runtimes.llamacpp.overrides import destinations

            self._moved = destinations(self.p.rules, weight_names(g))
        ids = self._assign(g)
        splits, copies, new_srcs = self._splits(g.nodes, ids)
        graph_inputs = self._graph_inputs(g.leafs, ids, copies)
        by_id = {id(t): t for s in splits for t in (s.inputs or ())}
        by_id.update((id(leaf), leaf) for leaf, _ in graph_inputs)
        #: each copy → (what it copies, (its backend, which copy)): Probe names a copy by its source
        self.copy_of = {
            id(cp): (by_id[src], (backend, c))
            for (src, backend), made in copies.items()
            for c, cp in enumerate(made)
            if cp is not by_id[src]
        }
        return self._graph_copy(g, ids, splits, copies, graph_inputs, new_srcs)

    def _pins(self, nodes: Sequence[Tensor], ids: dict[int, int]) -> None:
        """The assignments made while the graph was built (ggml_backend_sched_set_tensor_backend)."""
        for node in nodes:
            pin = node.pin
            if pin is None or not self.p.pins:
                continue
            if pin == PIN_CPU_WITHOUT_KV_OFFLOAD:
                if self.p.kv_on_host:
                    ids[id(node)] = self.cpu
            elif self.pin_norms:
                ids[id(node)] = self._backend_of_device(self.p.device_of_layer(pin))

    def _assign(self, g: Graph) -> dict[int, int]:
        """Passes 1 to 4: a backend for every leaf and node (tensor id → backend)."""
        nodes = g.nodes
        ids: dict[int, int] = {}
        self._pins(nodes, ids)
        for t in (*g.leafs, *nodes):  # pass 1: by where the memory or the weights are
            if id(t) not in ids:
                ids[id(t)] = self._from_cur(t)
        real = [n for n in nodes if n.op not in _VIEW_OPS]
        self._expand(real, ids)
        self._upgrade(real, ids)
        self._from_neighbours(nodes, ids)
        return ids

    def _expand(self, real: list[Tensor], ids: dict[int, int]) -> None:
        """Pass 2: GPU backends expanded down and up over the unassigned nodes (the CPU skipped), then every
        backend down and up (every op is supported by every backend here)."""
        cpu = self.cpu
        for order, skip_cpu in ((real, True), (real[::-1], True), (real, False), (real[::-1], False)):
            cur = -1
            for node in order:
                b = ids[id(node)]
                if b != -1:
                    cur = -1 if skip_cpu and b == cpu else b
                elif cur != -1:
                    ids[id(node)] = cur

    def _upgrade(self, real: list[Tensor], ids: dict[int, int]) -> None:
        """Pass 3: a node moves to a higher-priority backend of the same buffer type that reads all its sources;
        a node still unassigned goes to the backend that reads most of its sources."""
        for node in real:
            b = ids[id(node)]
            if b == -1:
                best_n = -1
                for cand in range(self.n_backends):
                    n_sup = sum(
                        1
                        for src in node.srcs
                        if src is not None
                        and (
                            ids.get(id(src), -1) != -1
                            or (src.view_src is not None and ids.get(id(src.view_src), -1) != -1)
                        )
                        and self._supported(src, cand, ids)
                    )
                    if n_sup > best_n:
                        best_n = n_sup
                        ids[id(node)] = cand
                continue
            for cand in range(b):
                if self.bufts[cand] == self.bufts[b] and all(
                    src is None or self._supported(src, cand, ids) for src in node.srcs
                ):
                    ids[id(node)] = cand
                    break

    @staticmethod
    def _from_neighbours(nodes: list[Tensor], ids: dict[int, int]) -> None:
        """Pass 4: views from their sources, sources from their users, the rest to the first backend."""
        for node in nodes:
            b = ids.get(id(node), -1)
            if node.view_src is not None and b == -1:
                b = ids.get(id(node.view_src), -1)
                ids[id(node)] = b
            for src in node.srcs:
                if src is not None and ids.get(id(src), -1) == -1:
                    ids[id(src)] = ids.get(id(src.view_src), -1) if src.view_src is not None else b
            if b == -1:
                ids[id(node)] = 0

    def _copy_of(self, src: Tensor, name: str, backend: int) -> Tensor:
        """A split's copy of a source in a backend's buffer; a weight's is its real size (on a device, as the
        device's buffer allocates it)."""
        cp = _dup_layout(src, name)
        if src.external and src.usage == USAGE_WEIGHTS:
            name = gguf_name(src)
            cp.nbytes = self.weight_bytes.get(name, src.nbytes)
            if backend != self.cpu:
                cp.nbytes += self.weight_extra.get(name, 0)
            cp.usage = USAGE_WEIGHTS  # (a copy in the compute buffer: only its role reads this)
        return cp

    def _needs_new_split(self, node: Tensor, cur_b: int, ids: dict[int, int]) -> bool:
        """A weight of the node on another backend whose buffer this one cannot read starts a new split."""
        return any(
            src is not None
            and src.external
            and src.usage == USAGE_WEIGHTS
            and ids[id(src)] != cur_b
            and not self._supported(src, cur_b, ids)
            for src in node.srcs
        )

    def _splits(
        self, nodes: list[Tensor], ids: dict[int, int]
    ) -> tuple[list[Split], dict[tuple[int, int], list[Tensor]], dict[int, tuple[Tensor | None, ...]]]:
        """Pass 5: the splits (where the backend changes), and a copy in each split's backend of every source it
        cannot read where it is (n_copies of them, marked input and output with pipeline parallelism)."""
        first = next((n for n in nodes if n.op not in _VIEW_OPS), None)
        split = Split(ids[id(first)] if first is not None else 0, 0, inputs=[])
        splits = [split]
        copies: dict[tuple[int, int], list[Tensor]] = {}
        new_srcs: dict[int, tuple[Tensor | None, ...]] = {}
        cur_b = split.backend
        start = nodes.index(first) if first is not None else len(nodes)
        for i in range(start, len(nodes)):
            node = nodes[i]
            if node.op in _VIEW_OPS:
                continue
            nb = ids[id(node)]
            if nb != cur_b or (split.inputs and self._needs_new_split(node, cur_b, ids)):
                split.i_end = i
                split = Split(nb, i, inputs=[])
                splits.append(split)
                cur_b = nb
            srcs = list(node.srcs)
            changed = False
            for j, src in enumerate(srcs):
                if src is None or ids[id(src)] == cur_b or self._supported(src, cur_b, ids):
                    continue
                made = copies.get((id(src), cur_b))
                if made is None:
                    made = [self._copy_of(src, f"{cur_b}#{src.name}#{c}", cur_b) for c in range(self.n_copies)]
                    if self.n_copies > 1:
                        for cp in made:
                            cp.flags |= FLAG_INPUT | FLAG_OUTPUT
                    copies[(id(src), cur_b)] = made
                    assert split.inputs is not None
                    split.inputs.append(src)
                srcs[j] = made[0]
                changed = True
            if changed:
                new_srcs[id(node)] = tuple(srcs)
        split.i_end = len(nodes)
        return splits, copies, new_srcs

    def _graph_inputs(
        self, leafs: list[Tensor], ids: dict[int, int], copies: dict[tuple[int, int], list[Tensor]]
    ) -> list[tuple[Tensor, list[Tensor]]]:
        """Pass 6 (pipeline parallelism): n_copies of every graph input, the first the input itself, all marked
        input and output."""
        out: list[tuple[Tensor, list[Tensor]]] = []
        if self.n_copies == 1:
            return out
        for leaf in leafs:
            if not leaf.flags & FLAG_INPUT:
                continue
            key = (id(leaf), ids[id(leaf)])
            if key not in copies:
                made = [leaf] + [_dup_layout(leaf, f"{key[1]}#{leaf.name}#{c}") for c in range(1, self.n_copies)]
                for cp in made:
                    cp.flags |= FLAG_INPUT | FLAG_OUTPUT
                copies[key] = made
            out.append((leaf, copies[key]))
        return out

    def _graph_copy(
        self,
        g: Graph,
        ids: dict[int, int],
        splits: list[Split],
        copies: dict[tuple[int, int], list[Tensor]],
        graph_inputs: list[tuple[Tensor, list[Tensor]]],
        new_srcs: dict[int, tuple[Tensor | None, ...]],
    ) -> SplitGraph:
        """The graph the allocator is given: each split's inputs (a view keeping the source alive, then its copy)
        before the split's nodes; the leafs: the copies (pipeline parallelism), then the graph's own."""
        out = SplitGraph([], [], [], [], new_srcs)
        deps = self._alloc_deps(g.nodes, splits, new_srcs)
        for s in splits:
            assert s.inputs is not None
            for inp in s.inputs:
                out.nodes += (_view_dep(inp), copies[(id(inp), s.backend)][0])
                out.node_backends += (ids[id(inp)], s.backend)
            for j in range(s.i_start, s.i_end):
                node = g.nodes[j]
                out.nodes.append(node)
                out.node_backends.append(ids[id(node)])
                keep = deps.get(id(node))
                for k in range(0, len(keep) if keep else 0, GGML_MAX_SRC):
                    assert keep is not None
                    out.nodes.append(_keep_dep(keep[k : k + GGML_MAX_SRC]))
                    out.node_backends.append(s.backend)
        if self.n_copies > 1:
            for leaf, made in graph_inputs:
                out.leafs += made
                out.leaf_backends += [ids[id(leaf)]] * len(made)
            for s in splits:
                assert s.inputs is not None
                for inp in s.inputs:
                    made = copies[(id(inp), s.backend)]
                    out.leafs += made
                    out.leaf_backends += [s.backend] * len(made)
        for leaf in g.leafs:
            out.leafs.append(leaf)
            out.leaf_backends.append(ids[id(leaf)])
        self.n_splits = len(splits)
        return out

    def _alloc_deps(
        self, nodes: list[Tensor], splits: list[Split], new_srcs: dict[int, tuple[Tensor | None, ...]]
    ) -> dict[int, list[Tensor]]:
        """The devices' graph_optimize over their splits (ggml_backend_sched_split_graph, after the splits): the
        tensors each node keeps alive (node id → kept tensors)."""
        if not self.rules.fusion_deps:
            return {}
        uses, starts = _fusion_scan(nodes)

        def srcs(t: Tensor) -> tuple[Tensor | None, ...]:
            return new_srcs.get(id(t), t.srcs)

        deps: dict[int, list[Tensor]] = {}
        for s in splits:
            if s.backend != self.cpu:
                deps.update(alloc_deps(nodes, s.i_start, s.i_end, uses, srcs, starts))
        return deps

    def reserve(self, g: Graph, probe: Probe | None = None) -> tuple[list[int], GraphAllocator]:
        """ggml_backend_sched_reserve_size: the compute buffer of every backend (devices, then the CPU); with a
        `probe`, the allocator's state recorded where each kept period of a shortened stretch begins."""
        flags = {id(t): t.flags for t in g.leafs}  # (pass 6 marks the graph's inputs: the graph is reused)
        saved = {}
        by_id = {id(n): n for n in g.nodes}
        try:
            sg = self.split(g)
            for key, srcs in sg.new_srcs.items():
                node = by_id[key]
                saved[key] = node.srcs
                node.srcs = srcs
            alloc = GraphAllocator(self.bufts)
            marks = probe.callbacks(alloc, sg.nodes, self.copy_of) if probe is not None else None
            sizes = alloc.reserve(sg.leafs, sg.nodes, sg.node_backends, sg.leaf_backends, marks)
        finally:
            for key, srcs in saved.items():
                by_id[key].srcs = srcs
            for t in g.leafs:
                t.flags = flags[id(t)]
        return sizes, alloc
