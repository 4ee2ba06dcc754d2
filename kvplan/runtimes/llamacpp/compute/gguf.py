"""A GGUF's worst-case graph: the builder's dimensions and optional tensors read from the file's metadata and
tensor infos."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from kvplan.runtimes.llamacpp.compute.archs import BUILDERS, Dims
from kvplan.runtimes.llamacpp.compute.context import Reserve, Weights
from kvplan.runtimes.llamacpp.compute.ggml import Graph
from kvplan.runtimes.llamacpp.context import LlamaCppSettings
from kvplan.runtimes.llamacpp.memory import plan
from kvplan.runtimes.llamacpp.plan import CacheKind, FlashAttn, MemoryPlan
from kvplan.sources.gguf_reader import GGUFFile, read_gguf
from kvplan.sources.gguf_source import load_gguf_model
from kvplan.sources.values import ArrayValue


def _int(kv: Mapping[str, object], key: str, default: int | None = None) -> int:
    v = kv.get(key, default)
    if isinstance(v, ArrayValue):
        v = v.values[0] if v.values else None
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
        n_vocab = tokens.count if isinstance(tokens, ArrayValue) else 0
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


def reserve_for(plan: MemoryPlan) -> Reserve:
    """The reserve graph's batch and caches for one of kvplan's llama.cpp plans (llama_context::sched_reserve)."""
    c = plan.context
    n_tokens = n_outputs = min(c.n_ctx, c.n_ubatch)
    if n_tokens % c.n_seq:
        n_tokens = (n_tokens + c.n_seq - 1) // c.n_seq * c.n_seq
    attn = [x for x in plan.caches if x.kind is CacheKind.ATTENTION]
    swa = [x for x in attn if x.name in ("sliding window", "chunked window")]
    full = [x for x in attn if x not in swa]
    return Reserve(
        n_tokens=n_tokens,
        n_seqs=c.n_seq,
        n_outputs=min(n_outputs, c.n_batch),
        flash_attn=c.flash_attn is FlashAttn.ON,
        kv_unified=c.kv_unified,
        type_k=c.type_k.name,
        type_v=c.type_v.name,
        n_stream=c.n_stream,
        kv_size=full[0].cells if full else 0,
        kv_size_swa=swa[0].cells if swa else 0,
    )


def graph_for_gguf(path: str, settings: Mapping[str, int | str], kv_size: int = 0) -> Graph:
    """Development entry (scripts/oracle): the graph for a GGUF and harness-style settings."""
    f = read_gguf(path, check_data_bounds=False)
    arch, d, w = dims_of(f)
    build = BUILDERS.get(arch)
    if build is None:
        raise NotImplementedError(f"no graph for {arch}")
    model = load_gguf_model(path)
    d = replace(d, swa=tuple(layer.swa for layer in model.layers[: d.n_layer]))
    fa = settings.get("fa", 1)
    s = LlamaCppSettings(
        n_ctx=int(settings.get("n_ctx", 4096)),
        n_seq=int(settings.get("n_seq_max", 1)),
        kv_unified=bool(settings.get("kv_unified", 0)),
        n_batch=int(settings.get("n_batch", 2048)),
        n_ubatch=int(settings.get("n_ubatch", 512)),
        type_k=str(settings.get("type_k", "f16")),
        type_v=str(settings.get("type_v", "f16")),
        flash_attn=FlashAttn.ON if fa == 1 else FlashAttn.OFF if fa == 0 else FlashAttn.AUTO,
        swa_full=bool(settings.get("swa_full", 1)),  # the C API default, as graph_dump
    )
    return build(d, reserve_for(plan(model, s)), w)
