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
    # MoE with attention sinks, biases and SWA on every other layer (window 128); its experts MXFP4 (MXFP4_MOE)
    "gpt-oss-20b": {"n_embd": 2880, "n_layer": 24, "n_head": 64, "n_kv": 8, "hd": 64, "n_ff": 2880,
                    "n_vocab": 201088, "ctx": 131072, "n_expert": 32, "n_expert_used": 4, "n_ff_exp": 2880,
                    "swa": 128},
    "gpt-oss-120b": {"n_embd": 2880, "n_layer": 36, "n_head": 64, "n_kv": 8, "hd": 64, "n_ff": 2880,
                     "n_vocab": 201088, "ctx": 131072, "n_expert": 128, "n_expert_used": 4, "n_ff_exp": 2880,
                     "swa": 128},
    # hybrid: gated delta-net (recurrent state) on 3 of every 4 layers, full attention on the 4th; MoE + shared
    "qwen3-next-80b-a3b": {"n_embd": 2048, "n_layer": 48, "n_head": 16, "n_kv": 2, "hd": 256, "n_ff": 5120,
                           "n_vocab": 151936, "ctx": 262144, "n_expert": 512, "n_expert_used": 10,
                           "n_ff_exp": 512, "n_ff_shexp": 512, "ssm_conv": 4, "ssm_state": 128, "ssm_groups": 16,
                           "ssm_v_heads": 32},
    # MoE after one dense layer, a shared expert, attention biases; and its MTP layer (blk.46, nextn) in the file,
    # which llama.cpp loads only for --mtp
    "glm-4.5-air": {"n_embd": 4096, "n_layer": 46, "n_head": 96, "n_kv": 8, "hd": 128, "n_ff": 10944,
                    "n_vocab": 151552, "ctx": 131072, "n_expert": 128, "n_expert_used": 8, "n_ff_exp": 1408,
                    "n_shared": 1, "dense_lead": 1, "nextn": 1},
    # MLA (the latent KV: kv_lora 512 + rope 64, one KV head), 3 dense layers then 256 experts + a shared one,
    # its MTP block (blk.61) in the file
    "deepseek-v3": {"n_embd": 7168, "n_layer": 61, "n_head": 128, "n_kv": 1, "hd": 192, "n_ff": 18432,
                    "n_vocab": 129280, "ctx": 163840, "n_expert": 256, "n_expert_used": 8, "n_ff_exp": 2048,
                    "n_shared": 1, "dense_lead": 3, "nextn": 1, "q_lora": 1536, "kv_lora": 512, "rope": 64,
                    "v_head": 128},
    # 94 layers: benchmarks/bench_fit.py
    "qwen3-235b-a22b": {"n_embd": 4096, "n_layer": 94, "n_head": 64, "n_kv": 4, "hd": 128, "n_ff": 12288,
                        "n_vocab": 151936, "ctx": 40960, "n_expert": 128, "n_expert_used": 8, "n_ff_exp": 1536},
}  # fmt: skip


def _fit_arch(h: dict[str, int]) -> str:
    if "ssm_state" in h:
        return "qwen3next"
    if "kv_lora" in h:
        return "deepseek2"
    if "dense_lead" in h:
        return "glm4moe"
    if "n_expert" in h:
        return "gpt-oss" if "swa" in h else "qwen3moe"
    return "gemma3" if "swa" in h else "llama"


def _fit_model_header(w: gguf.GGUFWriter, h: dict[str, int], arch: str) -> None:
    """The metadata of a FIT_MODELS entry: hyperparameters and a synthetic vocabulary of the right size."""
    w.add_context_length(h["ctx"])
    w.add_embedding_length(h["n_embd"])
    w.add_block_count(h["n_layer"] + h.get("nextn", 0))
    w.add_head_count(h["n_head"])
    w.add_head_count_kv(h["n_kv"])
    if "kv_lora" in h:  # MLA: the cache holds the latent (kv_lora + rope), the heads' own sizes go in *_mla
        w.add_key_length(h["kv_lora"] + h["rope"])
        w.add_value_length(h["kv_lora"])
        w.add_key_length_mla(h["hd"])
        w.add_value_length_mla(h["v_head"])
    else:
        w.add_key_length(h["hd"])
        w.add_value_length(h["hd"])
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(1e6)
    if arch != "qwen3moe":
        w.add_feed_forward_length(h["n_ff"])
    if "n_expert" in h:
        w.add_expert_count(h["n_expert"])
        w.add_expert_used_count(h["n_expert_used"])
        w.add_expert_feed_forward_length(h["n_ff_exp"])
    if "swa" in h:
        w.add_sliding_window(h["swa"])
    if arch == "qwen3next":
        w.add_expert_shared_feed_forward_length(h["n_ff_shexp"])
        w.add_rope_dimension_count(h["hd"] // 4)
        w.add_ssm_conv_kernel(h["ssm_conv"])
        w.add_ssm_state_size(h["ssm_state"])
        w.add_ssm_group_count(h["ssm_groups"])
        w.add_ssm_time_step_rank(h["ssm_v_heads"])
        w.add_ssm_inner_size(h["ssm_state"] * h["ssm_v_heads"])
    elif arch in ("deepseek2", "glm4moe"):  # dense lead layers, shared experts, sigmoid routing, an MTP block
        deepseek = arch == "deepseek2"
        w.add_rope_dimension_count(h["rope"] if deepseek else h["hd"] // 2)
        if deepseek:
            w.add_q_lora_rank(h["q_lora"])
            w.add_kv_lora_rank(h["kv_lora"])
        w.add_uint32(f"{arch}.nextn_predict_layers", h["nextn"])
        w.add_leading_dense_block_count(h["dense_lead"])
        w.add_expert_shared_count(h["n_shared"])
        w.add_expert_gating_func(gguf.ExpertGatingFuncType.SIGMOID)
        w.add_expert_weights_scale(2.5 if deepseek else 1.0)
        w.add_expert_weights_norm(True)
    elif arch in ("llama", "gpt-oss"):
        w.add_rope_dimension_count(h["hd"])
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list([f"t{i}" for i in range(h["n_vocab"])])
    w.add_token_types([1] * h["n_vocab"])
    w.add_token_merges(["t1 t2"])


#: a tensor to write: (name, shape as in llama.cpp's create_tensor, kind: "w" a weight, "x" an expert weight,
#: "f" kept F32 — norms, biases, routers, sinks, convolutions)
_Tensor = tuple[str, tuple[int, ...], str]


def _fit_layer_tensors(h: dict[str, int], arch: str, i: int) -> list[_Tensor]:
    """Layer ``i``'s tensors, as the architecture's load_arch_tensors (src/models/*.cpp) creates them."""
    e, hd = h["n_embd"], h["hd"]
    q, kv = h["n_head"] * hd, h["n_kv"] * hd
    p = f"blk.{i}."
    out: list[_Tensor] = [(p + "attn_norm.weight", (e,), "f")]
    recurrent = arch == "qwen3next" and (i + 1) % 4 != 0
    if arch == "deepseek2":  # MLA: q through its LoRA, the latent KV, per-head K and V up-projections
        ql, kl, nope, vh, nh = h["q_lora"], h["kv_lora"], h["hd"] - h["rope"], h["v_head"], h["n_head"]
        out += [
            (p + "attn_q_a_norm.weight", (ql,), "f"),
            (p + "attn_kv_a_norm.weight", (kl,), "f"),
            (p + "attn_q_a.weight", (e, ql), "w"),
            (p + "attn_q_b.weight", (ql, nh * hd), "w"),
            (p + "attn_kv_a_mqa.weight", (e, kl + h["rope"]), "w"),
            (p + "attn_k_b.weight", (nope, kl, nh), "w"),
            (p + "attn_v_b.weight", (kl, vh, nh), "w"),
            (p + "attn_output.weight", (nh * vh, e), "w"),
        ]
    elif recurrent:  # gated delta-net: key_dim = state * groups, value_dim = state * v_heads
        kd, vd, nv = h["ssm_state"] * h["ssm_groups"], h["ssm_state"] * h["ssm_v_heads"], h["ssm_v_heads"]
        out += [
            (p + "ssm_in.weight", (e, 2 * kd + 2 * vd), "w"),
            (p + "ssm_conv1d.weight", (h["ssm_conv"], 2 * kd + vd), "f"),
            (p + "ssm_dt.bias", (nv,), "f"),
            (p + "ssm_a", (nv,), "f"),
            (p + "ssm_ba.weight", (e, 2 * nv), "w"),
            (p + "ssm_norm.weight", (h["ssm_state"],), "f"),
            (p + "ssm_out.weight", (vd, e), "w"),
        ]
    else:
        out += [
            (p + "attn_q.weight", (e, 2 * q if arch == "qwen3next" else q), "w"),  # Qwen3-Next: q and its gate
            (p + "attn_k.weight", (e, kv), "w"),
            (p + "attn_v.weight", (e, kv), "w"),
            (p + "attn_output.weight", (q, e), "w"),
        ]
        if arch == "glm4moe":
            out += [(p + f"attn_{x}.bias", (n,), "f") for x, n in (("q", q), ("k", kv), ("v", kv))]
        if arch == "gpt-oss":
            out += [(p + f"attn_{x}.bias", (n,), "f") for x, n in (("q", q), ("k", kv), ("v", kv), ("output", e))]
            out.append((p + "attn_sinks.weight", (h["n_head"],), "f"))
    if arch in ("llama", "gemma3", "qwen3moe", "deepseek2"):
        out.append((p + "ffn_norm.weight", (e,), "f"))
    if arch in ("gemma3", "qwen3next", "gpt-oss", "glm4moe"):
        out.append((p + "post_attention_norm.weight", (e,), "f"))
    if arch == "gemma3":
        out.append((p + "post_ffw_norm.weight", (e,), "f"))
    if arch in ("qwen3moe", "gemma3") or (arch == "qwen3next" and not recurrent):
        out += [(p + "attn_q_norm.weight", (hd,), "f"), (p + "attn_k_norm.weight", (hd,), "f")]
    if arch in ("glm4moe", "deepseek2") and i >= h["n_layer"]:  # the MTP layer's own tensors
        out += [(p + "nextn.eh_proj.weight", (2 * e, e), "w"), (p + "nextn.enorm.weight", (e,), "f"),
                (p + "nextn.hnorm.weight", (e,), "f"), (p + "nextn.shared_head_norm.weight", (e,), "f")]  # fmt: skip
    return out + _fit_ffn_tensors(h, arch, i)


def _fit_ffn_tensors(h: dict[str, int], arch: str, i: int) -> list[_Tensor]:
    """Layer ``i``'s feed-forward tensors: dense, or router, experts and shared experts."""
    e, p = h["n_embd"], f"blk.{i}."
    out: list[_Tensor] = []
    if "n_expert" not in h or i < h.get("dense_lead", 0):
        ff = h["n_ff"]
        return [(p + "ffn_gate.weight", (e, ff), "w"), (p + "ffn_up.weight", (e, ff), "w"),
                (p + "ffn_down.weight", (ff, e), "w")]  # fmt: skip
    ne, ff = h["n_expert"], h["n_ff_exp"]
    out += [
        (p + "ffn_gate_inp.weight", (e, ne), "f"),
        (p + "ffn_gate_exps.weight", (e, ff, ne), "x"),
        (p + "ffn_up_exps.weight", (e, ff, ne), "x"),
        (p + "ffn_down_exps.weight", (ff, e, ne), "x"),
    ]
    if arch == "gpt-oss":
        out += [(p + "ffn_gate_inp.bias", (ne,), "f"), (p + "ffn_gate_exps.bias", (ff, ne), "f"),
                (p + "ffn_up_exps.bias", (ff, ne), "f"), (p + "ffn_down_exps.bias", (e, ne), "f")]  # fmt: skip
    if arch in ("glm4moe", "deepseek2"):
        out.append((p + "exp_probs_b.bias", (ne,), "f"))
    if arch in ("qwen3next", "glm4moe", "deepseek2"):
        sh = h["n_ff_shexp"] if arch == "qwen3next" else ff * h["n_shared"]
        if arch == "qwen3next":
            out.append((p + "ffn_gate_inp_shexp.weight", (e,), "f"))
        out += [
            (p + "ffn_gate_shexp.weight", (e, sh), "w"),
            (p + "ffn_up_shexp.weight", (e, sh), "w"),
            (p + "ffn_down_shexp.weight", (sh, e), "w"),
        ]
    return out


def _weight_type(name: str, kind: str, weight_type: str, n_layer: int, row: int) -> Any:
    """The type a tensor gets: F32 for kind "f"; else ``weight_type``, where MXFP4_MOE is llama.cpp's quantize
    type of that name (experts MXFP4, other weights Q8_0) and Q4_K_M its mix (llama_tensor_get_type: Q4_K, with
    Q6_K for the output and for attn_v / ffn_down of the layers use_more_bits picks; a row that is not a whole
    number of 256-blocks falls back as llama_tensor_get_type's fallback does: Q4_K to Q5_0, Q6_K to Q8_0)."""
    q = gguf.GGMLQuantizationType
    if kind == "f":
        return q.F32
    if weight_type == "MXFP4_MOE":
        return q.MXFP4 if kind == "x" else q.Q8_0
    if weight_type != "Q4_K_M":
        return q[weight_type]
    i = int(name.split(".")[1]) if name.startswith("blk.") else -1
    more_bits = i < n_layer // 8 or i >= 7 * n_layer // 8 or (i - n_layer // 8) % 3 == 2
    big = name == "output.weight" or (i >= 0 and (".attn_v." in name or ".ffn_down" in name) and more_bits)
    if row % 256:
        return q.Q8_0 if big else q.Q5_0
    return q.Q6_K if big else q.Q4_K


def _sparse(w: gguf.GGUFWriter, path: Path, tensors: list[tuple[str, tuple[int, ...], Any]]) -> Path:
    """The writer's key-values and these tensor infos (name, shape, GGML type), then the file extended to where
    the tensors' data would end (sparse: no data is written)."""
    import os

    for name, shape, typ in tensors:
        block, size = gguf.GGML_QUANT_SIZES[typ]
        n = int(np.prod(shape))
        w.add_tensor_info(name, tuple(reversed(shape)), np.dtype(np.float16), n // block * size, raw_dtype=typ)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()
    data_start = (os.path.getsize(path) + 31) // 32 * 32
    os.truncate(path, data_start)  # kvplan's reader then finds the tensors' extent
    from kvplan.sources.gguf_reader import read_gguf

    g = read_gguf(path, check_data_bounds=False)
    os.truncate(path, data_start + max(t.offset + t.n_bytes for t in g.tensors))
    return path


def sparse_fit_model(path: Path, name: str, weight_type: str = "F16") -> Path:
    """``name`` of FIT_MODELS as a full-size sparse GGUF (dense Llama, Gemma-3, Qwen3-MoE, gpt-oss, Qwen3-Next,
    with the tensors llama.cpp's loader requires) whose weights are ``weight_type`` (F16, BF16, Q8_0, Q4_K_M:
    llama.cpp's quantize mix of Q4_K and Q6_K, or MXFP4_MOE), norms, biases and routers F32."""

    h = FIT_MODELS[name]
    arch = _fit_arch(h)
    w = gguf.GGUFWriter(str(path), arch)
    _fit_model_header(w, h, arch)
    e, v = h["n_embd"], h["n_vocab"]
    tensors: list[_Tensor] = [("token_embd.weight", (e, v), "w"), ("output_norm.weight", (e,), "f")]
    if arch != "gemma3":  # Gemma ties its output to the token embeddings (llama.cpp duplicates them)
        tensors.append(("output.weight", (e, v), "w"))
    for i in range(h["n_layer"] + h.get("nextn", 0)):
        tensors += _fit_layer_tensors(h, arch, i)
    infos = [(t, shape, _weight_type(t, kind, weight_type, h["n_layer"], shape[0])) for t, shape, kind in tensors]
    return _sparse(w, path, infos)


def _copy_kv(r: gguf.GGUFReader, w: gguf.GGUFWriter) -> None:
    """Every key-value of ``r`` but the architecture (the writer's own) into ``w``, with its own types."""
    for f in r.fields.values():
        if f.name.startswith("GGUF.") or f.name == "general.architecture":
            continue
        t = f.types[0]
        if t == gguf.GGUFValueType.ARRAY:
            sub = f.types[-1]
            vals: Any = (
                [bytes(f.parts[i]).decode() for i in f.data]
                if sub == gguf.GGUFValueType.STRING
                else [f.parts[i].tolist()[0] for i in f.data]
            )
            w.add_key_value(f.name, vals, t, sub_type=sub)
        elif t == gguf.GGUFValueType.STRING:
            w.add_key_value(f.name, bytes(f.parts[f.data[0]]).decode(), t)
        else:
            w.add_key_value(f.name, f.parts[f.data[0]].tolist()[0], t)


def with_tensors(source: Path, path: Path, tensors: list[tuple[str, tuple[int, ...]]]) -> Path:
    """``source``'s metadata (a metadata-only fixture GGUF) with the given tensors (GGUF shapes, f32 zeros): a file
    llama.cpp loads as a real model (FROM_FILE), so its loader creates only the tensors the file has — the way a
    converted checkpoint's optional tensors are decided."""
    r = gguf.GGUFReader(str(source))
    arch = str(bytes(r.fields["general.architecture"].parts[-1]), "utf-8")
    w = gguf.GGUFWriter(str(path), arch)
    _copy_kv(r, w)
    for name, shape in tensors:
        w.add_tensor(name, np.zeros(shape[::-1], dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


#: files made from a fixture's metadata and a tensor list (compute_graph.json's "GEN:" cases): Phi-3 as its
#: converter writes it — the fused attn_qkv, no biases, no RoPE factors (a 4k-context checkpoint)
GENERATED: dict[str, tuple[str, list[tuple[str, tuple[int, ...]]]]] = {
    "phi3-fused-qkv": (
        "tiny/phi3-dense.gguf",
        [("token_embd.weight", (256, 128)), ("output_norm.weight", (256,)), ("output.weight", (256, 128))]
        + [
            (f"blk.{i}.{n}", s)
            for i in range(2)
            for n, s in (
                ("attn_norm.weight", (256,)),
                ("attn_qkv.weight", (256, 768)),
                ("attn_output.weight", (256, 256)),
                ("ffn_norm.weight", (256,)),
                ("ffn_up.weight", (256, 768)),
                ("ffn_down.weight", (384, 256)),
            )
        ],
    ),
}


def generated(name: str, folder: Path) -> Path:
    source, tensors = GENERATED[name]
    fixtures = Path(__file__).resolve().parent / "fixtures" / "oracle"
    path = folder / f"{name}.gguf"
    return path if path.exists() else with_tensors(fixtures / source, path, tensors)


def gemma_270m_sparse(path: Path) -> Path:
    """The real Gemma 3 270M Q4_K_M as llama.cpp loads it, without its data: the shipped metadata-only copy's
    key-values and the real file's tensor infos (tests/fixtures/oracle/file/*.tensors.json: name, type, shape),
    in the file's order, extended to full size (sparse) — its weights per device exact."""
    return sparse_file("gemma-3-270m-q4_k_m", path)


def sparse_file(stem: str, path: Path) -> Path:
    """tests/fixtures/oracle/file/STEM: its metadata-only GGUF's key-values and its tensor infos (STEM.tensors.json:
    name, GGML type, shape in ggml order), extended to full size (sparse): the file llama.cpp and kvplan load. The
    Gemma file's infos are the real file's; the public logs' two are reconstructed from their logs
    (scripts/oracle/reconstruct_public_gguf.py)."""
    import json

    fixtures = Path(__file__).resolve().parent / "fixtures" / "oracle" / "file"
    infos = json.loads((fixtures / f"{stem}.tensors.json").read_text())["tensors"]
    r = gguf.GGUFReader(str(fixtures / f"{stem}.meta.gguf"))
    arch = bytes(r.fields["general.architecture"].parts[-1]).decode()
    w = gguf.GGUFWriter(str(path), arch)
    _copy_kv(r, w)
    return _sparse(w, path, [(name, tuple(shape), gguf.GGMLQuantizationType(typ)) for name, typ, shape in infos])
