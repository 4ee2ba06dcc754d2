"""Model description from a local GGUF file, including split models (-00001-of-0000N.gguf)."""

from __future__ import annotations

import dataclasses
import os
import re

from kvplan.errors import GGUFError
from kvplan.facts.ggml_types import CUDA_BUFFER_ALIGNMENT, GGML_TYPES_BY_ID, cuda_alloc_size
from kvplan.model import ModelDescription, TensorWeights
from kvplan.sources.gguf_reader import GGUFFile, TensorInfo, read_gguf
from kvplan.sources.metadata import describe
from kvplan.units import pad_to

_SPLIT_RE = re.compile(r"^(?P<prefix>.*)-(?P<no>\d{5})-of-(?P<count>\d{5})\.gguf$")


def split_shard_paths(path: str) -> list[str]:
    """All shard paths of a split GGUF named like ``model-00001-of-00003.gguf`` (else just ``path``)."""
    m = _SPLIT_RE.match(path)
    if not m:
        return [path]
    count = int(m.group("count"))
    return [f"{m.group('prefix')}-{i:05d}-of-{count:05d}.gguf" for i in range(1, count + 1)]


def read_model_files(path: str) -> list[GGUFFile]:
    """Read the metadata of a GGUF and, for a split model, of every shard (first shard first)."""
    shards = split_shard_paths(path)
    first = shards[0]
    if first != path and not os.path.exists(first):
        raise GGUFError(path, None, f"split model: first shard {os.path.basename(first)} not found")
    files = []
    for shard in shards:
        if not os.path.exists(shard):
            raise GGUFError(shard, None, f"split model shard missing ({len(shards)} expected)")
        files.append(read_gguf(shard))
    declared = files[0].kv.get("split.count")
    if isinstance(declared, int) and declared not in (0, len(files)):
        raise GGUFError(first, None, f"split.count is {declared} but the file name says {len(files)} shards")
    return files


def load_gguf_model(path: str) -> ModelDescription:
    """A local GGUF (split models: all shards), or a remote one (http(s):// or hf://, headers only)."""
    from kvplan.sources.remote import is_remote, read_remote_model_files, redact

    if is_remote(path):
        from kvplan import progress

        shown = path.split("?", 1)[0].rsplit("/", 1)[-1]  # the file's name: no host, no credentials

        def fetched(n: int) -> None:
            progress.report(f"fetching {shown}", n, None, "bytes")

        files, _transferred = read_remote_model_files(path, fetched if progress.reporting() else None)
    else:
        files = read_model_files(path)
    meta = files[0]
    tensors = [t for f in files for t in f.tensors]
    weight_bytes = sum(t.n_bytes for t in tensors) if tensors else None
    n_params = sum(t.n_elements for t in tensors) if tensors else None
    name = meta.kv.get("general.name")
    if not isinstance(name, str) or not name or name == "n/a":
        name = os.path.basename(path.split("?", 1)[0])
    model = describe(
        meta.kv,
        source=redact(path),
        source_kind="gguf",
        name=name,
        weight_bytes=weight_bytes,
        n_params=n_params,
        tensor_names=frozenset(t.name for t in tensors),
        kv_types=meta.kv_types,
    )
    from kvplan.sources.graph_facts import graph_facts

    model = dataclasses.replace(model, graph=graph_facts(meta.kv, {t.name: t.shape for t in tensors}))
    if tensors:
        experts = sum(t.n_elements for t in tensors if _EXPS.search(t.name))
        model = dataclasses.replace(
            model,
            tensor_weights=tensor_weights(tensors, model.n_layer_all),
            expert_params=experts if experts else model.expert_params,
        )
    return model


def tensor_weights(tensors: list[TensorInfo], n_layer_all: int) -> TensorWeights:
    """Tensor bytes by llama.cpp's placement unit: the input layer (token_embd), each layer (``blk.N.*``), the
    output layer (the rest). Tied embeddings (no output.weight) are duplicated onto the output layer, as
    llama.cpp does."""
    input_bytes = output_bytes = 0
    layers = [0] * n_layer_all
    experts = [0] * n_layer_all
    placed: list[tuple[str, int, int]] = []
    for t in tensors:
        parts = t.name.split(".")
        if parts[0] == "blk" and len(parts) > 1 and parts[1].isdigit() and int(parts[1]) < n_layer_all:
            layers[int(parts[1])] += t.n_bytes
            placed.append((t.name, int(parts[1]), t.n_bytes))
            if _EXPS.search(t.name):
                experts[int(parts[1])] += t.n_bytes
        elif parts[0] == "token_embd":
            input_bytes += t.n_bytes
            placed.append((t.name, -1, t.n_bytes))
        else:
            output_bytes += t.n_bytes
            placed.append((t.name, -2, t.n_bytes))
    names = {t.name for t in tensors}
    if "output.weight" not in names and "token_embd.weight" in names:
        tied = next(t.n_bytes for t in tensors if t.name == "token_embd.weight")
        output_bytes += tied
        placed.append(("token_embd.weight", -2, tied))  # llama.cpp loads it again as the output (duplicated)
    pads = {t.name: _cuda_extra(t) for t in tensors}
    padding = tuple((name, il, pads[name]) for name, il, _b in placed if pads.get(name))
    return TensorWeights(
        input_bytes, tuple(layers), output_bytes, tuple(experts) if any(experts) else (), tuple(placed), padding
    )


def _cuda_extra(t: TensorInfo) -> int:
    """What a CUDA buffer allocates for the tensor beyond its bytes: its allocation size (a quantized last row
    padded), aligned to the buffer's 128 bytes (ggml-alloc.c alloc_tensor_range)."""
    ne0 = t.shape[0] if t.shape else 1
    return pad_to(cuda_alloc_size(GGML_TYPES_BY_ID[t.ggml_type], ne0, t.n_bytes), CUDA_BUFFER_ALIGNMENT) - t.n_bytes


#: llama.cpp's LLM_FFN_EXPS_REGEX (common/arg.cpp): the MoE expert tensors --cpu-moe / --n-cpu-moe move
_EXPS = re.compile(r"\.ffn_(up|down|gate|gate_up)_(ch|)exps")
