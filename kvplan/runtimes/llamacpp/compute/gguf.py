"""A GGUF's worst-case graph: the builder's dimensions and optional tensors read from the file's metadata and
tensor infos."""

from __future__ import annotations

from collections.abc import Mapping

from kvplan.runtimes.llamacpp.compute.archs import BUILDERS, Dims
from kvplan.runtimes.llamacpp.compute.context import Reserve, Weights
from kvplan.runtimes.llamacpp.compute.ggml import Graph
from kvplan.sources.gguf_reader import GGUFFile, read_gguf


def _int(kv: Mapping[str, object], key: str, default: int | None = None) -> int:
    v = kv.get(key, default)
    if isinstance(v, list):
        v = v[0]
    if not isinstance(v, int):
        raise NotImplementedError(f"{key} missing")
    return v


def dims_of(f: GGUFFile) -> tuple[str, Dims, Weights]:
    arch = f.architecture or ""
    kv = f.kv
    shapes = {t.name: t.shape for t in f.tensors}
    n_embd = _int(kv, f"{arch}.embedding_length")
    n_head = _int(kv, f"{arch}.attention.head_count")
    n_head_kv = _int(kv, f"{arch}.attention.head_count_kv", n_head)
    head_k = _int(kv, f"{arch}.attention.key_length", n_embd // n_head)
    head_v = _int(kv, f"{arch}.attention.value_length", head_k)
    if "token_embd.weight" in shapes:
        n_vocab = shapes["token_embd.weight"][1]
    elif f"{arch}.vocab_size" in kv:
        n_vocab = _int(kv, f"{arch}.vocab_size")
    else:
        tokens = kv.get("tokenizer.ggml.tokens")
        n_vocab = len(tokens) if tokens is not None else 0  # type: ignore[arg-type]
    present = set()
    for name in shapes:
        short = name[len("blk.0.") :] if name.startswith("blk.0.") else name
        if name.startswith("blk.") and not name.startswith("blk.0."):
            continue
        present.add(short.removesuffix(".weight"))
    d = Dims(
        n_embd=n_embd,
        n_vocab=n_vocab,
        n_layer=_int(kv, f"{arch}.block_count"),
        n_head=n_head,
        n_head_kv=n_head_kv,
        head_k=head_k,
        head_v=head_v,
        n_ff=_int(kv, f"{arch}.feed_forward_length", 0),
        n_expert=_int(kv, f"{arch}.expert_count", 0),
        n_expert_used=_int(kv, f"{arch}.expert_used_count", 0),
        n_ff_exp=_int(kv, f"{arch}.expert_feed_forward_length", 0),
        expert_weights_scale=float(kv.get(f"{arch}.expert_weights_scale", 0.0)),  # type: ignore[arg-type]
    )
    return arch, d, Weights(frozenset(present), all_optional=not f.tensors)


def graph_for_gguf(path: str, settings: Mapping[str, int], kv_size: int) -> Graph:
    f = read_gguf(path, check_data_bounds=False)
    arch, d, w = dims_of(f)
    build = BUILDERS.get(arch)
    if build is None:
        raise NotImplementedError(f"no graph for {arch}")
    n_ctx = settings.get("n_ctx", 4096)
    n_seqs = settings.get("n_seq_max", 1)
    unified = bool(settings.get("kv_unified", 0))
    n_tokens = n_outputs = min(n_ctx, settings.get("n_ubatch", 512))
    if n_tokens % n_seqs:
        n_tokens = (n_tokens + n_seqs - 1) // n_seqs * n_seqs
    r = Reserve(
        n_tokens=n_tokens,
        n_seqs=n_seqs,
        n_outputs=min(n_outputs, settings.get("n_batch", 2048)),
        flash_attn=settings.get("fa", 1) == 1,
        kv_unified=unified,
        type_k=str(settings.get("type_k", "f16")),
        type_v=str(settings.get("type_v", "f16")),
        kv_size=kv_size,
        n_stream=1 if unified else n_seqs,
    )
    return build(d, r, w)
