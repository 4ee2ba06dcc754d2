"""GGUF files written for tests with the gguf package's own writer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gguf
import numpy as np


def split_shard(path: Path, no: int, count: int, tensor: str, rows: int) -> None:
    w = gguf.GGUFWriter(str(path), "llama")
    if no == 0:
        w.add_block_count(2)
        w.add_context_length(4096)
        w.add_embedding_length(64)
        w.add_head_count(4)
    w.add_uint16("split.no", no)
    w.add_uint16("split.count", count)
    w.add_int32("split.tensors.count", 2)
    w.add_tensor(tensor, np.zeros((rows, 64), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def big_vocab_model(path: Path, vocab: int = 150_000, tensor_mib: int = 24) -> Path:
    """A Llama-shaped GGUF with a large vocabulary and ``tensor_mib`` MiB of tensor data."""
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_context_length(8192)
    w.add_embedding_length(4096)
    w.add_block_count(32)
    w.add_head_count(32)
    w.add_head_count_kv(8)
    w.add_tokenizer_model("gpt2")
    w.add_token_list([f"token-{i}" for i in range(vocab)])
    w.add_tensor("token_embd.weight", np.zeros((tensor_mib * 256, 1024), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


#: full-size models for llama.cpp's own fit (issue 18): GGUF metadata and tensor infos as llama.cpp loads them,
#: a synthetic vocabulary of the right size, and no data (the file extended to its full size, sparse)
FIT_MODELS: dict[str, dict[str, int]] = {
    "llama-3.1-8b": {"n_embd": 4096, "n_layer": 32, "n_head": 32, "n_kv": 8, "hd": 128, "n_ff": 14336,
                     "n_vocab": 128256, "ctx": 131072},
    "qwen3-30b-a3b": {"n_embd": 2048, "n_layer": 48, "n_head": 32, "n_kv": 4, "hd": 128, "n_ff": 6144,
                      "n_vocab": 151936, "ctx": 40960, "n_expert": 128, "n_expert_used": 8, "n_ff_exp": 768},
    # sliding-window attention (5 of every 6 layers, window 1024), tied embeddings
    "gemma-3-12b": {"n_embd": 3840, "n_layer": 48, "n_head": 16, "n_kv": 8, "hd": 256, "n_ff": 15360,
                    "n_vocab": 262144, "ctx": 131072, "swa": 1024},
    # 94 layers: benchmarks/bench_fit.py
    "qwen3-235b-a22b": {"n_embd": 4096, "n_layer": 94, "n_head": 64, "n_kv": 4, "hd": 128, "n_ff": 12288,
                        "n_vocab": 151936, "ctx": 40960, "n_expert": 128, "n_expert_used": 8, "n_ff_exp": 1536},
}  # fmt: skip


def _fit_model_header(w: gguf.GGUFWriter, h: dict[str, int]) -> None:
    """The metadata of a FIT_MODELS entry: hyperparameters and a synthetic vocabulary of the right size."""
    w.add_context_length(h["ctx"])
    w.add_embedding_length(h["n_embd"])
    w.add_block_count(h["n_layer"])
    w.add_head_count(h["n_head"])
    w.add_head_count_kv(h["n_kv"])
    w.add_key_length(h["hd"])
    w.add_value_length(h["hd"])
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(1e6)
    if "n_expert" in h:
        w.add_expert_count(h["n_expert"])
        w.add_expert_used_count(h["n_expert_used"])
        w.add_expert_feed_forward_length(h["n_ff_exp"])
    elif "swa" in h:
        w.add_feed_forward_length(h["n_ff"])
        w.add_sliding_window(h["swa"])
    else:
        w.add_feed_forward_length(h["n_ff"])
        w.add_rope_dimension_count(h["hd"])
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list([f"t{i}" for i in range(h["n_vocab"])])
    w.add_token_types([1] * h["n_vocab"])
    w.add_token_merges(["t1 t2"])


def _weight_type(name: str, typ: gguf.GGMLQuantizationType, weight_type: str, n_layer: int) -> Any:
    """The type a 2-D weight gets: ``weight_type``, or for Q4_K_M llama.cpp's quantize mix (llama_tensor_get_type:
    Q4_K, with Q6_K for the output and for attn_v / ffn_down of the layers use_more_bits picks)."""
    if typ == gguf.GGMLQuantizationType.F32 or weight_type != "Q4_K_M":
        return typ
    if name == "output.weight":
        return gguf.GGMLQuantizationType.Q6_K
    i = int(name.split(".")[1]) if name.startswith("blk.") else -1
    more_bits = i < n_layer // 8 or i >= 7 * n_layer // 8 or (i - n_layer // 8) % 3 == 2
    if i >= 0 and (".attn_v." in name or ".ffn_down" in name) and more_bits:
        return gguf.GGMLQuantizationType.Q6_K
    return gguf.GGMLQuantizationType.Q4_K


def sparse_fit_model(path: Path, name: str, weight_type: str = "F16") -> Path:
    """``name`` of FIT_MODELS as a full-size sparse GGUF (dense Llama, Gemma-3, or Qwen3-MoE with expert tensors)
    whose 2-D weights are ``weight_type`` (F16, BF16, Q8_0, or Q4_K_M: llama.cpp's quantize mix of Q4_K and Q6_K),
    norms F32."""
    import os

    h = FIT_MODELS[name]
    moe = "n_expert" in h
    gemma = "swa" in h
    w = gguf.GGUFWriter(str(path), "qwen3moe" if moe else "gemma3" if gemma else "llama")
    _fit_model_header(w, h)
    f32 = gguf.GGMLQuantizationType.F32
    wt = gguf.GGMLQuantizationType.Q4_K if weight_type == "Q4_K_M" else gguf.GGMLQuantizationType[weight_type]

    def tensor(name: str, shape: tuple[int, ...], typ: gguf.GGMLQuantizationType = wt) -> None:
        typ = _weight_type(name, typ, weight_type, h["n_layer"])
        block, size = gguf.GGML_QUANT_SIZES[typ]
        n = int(np.prod(shape))
        w.add_tensor_info(name, tuple(reversed(shape)), np.dtype(np.float16), n // block * size, raw_dtype=typ)

    e, v = h["n_embd"], h["n_vocab"]
    tensor("token_embd.weight", (e, v))
    tensor("output_norm.weight", (e,), f32)
    if not gemma:  # Gemma ties its output to the token embeddings (llama.cpp duplicates them)
        tensor("output.weight", (e, v))
    q, kv = h["n_head"] * h["hd"], h["n_kv"] * h["hd"]
    for i in range(h["n_layer"]):
        p = f"blk.{i}."
        tensor(p + "attn_norm.weight", (e,), f32)
        tensor(p + "attn_q.weight", (e, q))
        tensor(p + "attn_k.weight", (e, kv))
        tensor(p + "attn_v.weight", (e, kv))
        tensor(p + "attn_output.weight", (q, e))
        tensor(p + "ffn_norm.weight", (e,), f32)
        if gemma:
            for norm in ("post_attention_norm", "post_ffw_norm"):
                tensor(p + f"{norm}.weight", (e,), f32)
            for norm in ("attn_q_norm", "attn_k_norm"):
                tensor(p + f"{norm}.weight", (h["hd"],), f32)
        if moe:
            tensor(p + "attn_q_norm.weight", (h["hd"],), f32)
            tensor(p + "attn_k_norm.weight", (h["hd"],), f32)
            tensor(p + "ffn_gate_inp.weight", (e, h["n_expert"]), f32)
            for part in ("gate", "up"):
                tensor(p + f"ffn_{part}_exps.weight", (e, h["n_ff_exp"], h["n_expert"]))
            tensor(p + "ffn_down_exps.weight", (h["n_ff_exp"], e, h["n_expert"]))
        else:
            tensor(p + "ffn_gate.weight", (e, h["n_ff"]))
            tensor(p + "ffn_up.weight", (e, h["n_ff"]))
            tensor(p + "ffn_down.weight", (h["n_ff"], e))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()
    header = os.path.getsize(path)
    data_start = (header + 31) // 32 * 32
    os.truncate(path, data_start)  # kvplan's reader then finds the tensors' extent
    from kvplan.sources.gguf_reader import read_gguf

    g = read_gguf(path, check_data_bounds=False)
    os.truncate(path, data_start + max(t.offset + t.n_bytes for t in g.tensors))
    return path
