"""Reconstruct, without their data, the two GGUFs the public CUDA logs loaded (tests/fixtures/logs/llamacpp/public/):
gpt-oss-20b-MXFP4.gguf and an early DeepSeek-Coder-V2-Lite Q4_0 conversion (no MLA keys, attn_kv_b).

What the log states is taken from it: the metadata (the loader's dump, read back by kvplan.sources.log_model), the
tensor count and the count of each type (`- type q4_0: 268 tensors`), and which tensors llama.cpp created
(`create_tensor: loading tensor ...` in the -v logs the repository keeps). The shapes follow from the
metadata as llama.cpp's create_tensor calls state them (src/models/gpt-oss.cpp, deepseek2.cpp), and each
tensor's type from the counts: gpt-oss's MXFP4 conversion keeps norms, biases, sinks and the router in f32, the
experts in MXFP4 and every other matrix in q8_0; a pure Q4_0 file keeps norms and the router in f32 and its output
in q6_K (llama_tensor_get_type) - the script checks both against the log's counts. The files' tensor ORDER is not
in the log (it decides a host buffer's mmap range, which kvplan does not claim for these files).

The vocabulary is kept as its size alone (no_vocab and `{arch}.vocab_size`, as the oracle's metadata-only
fixtures do): the dump states the token list's length, not the tokens.

Writes tests/fixtures/oracle/file/<stem>.meta.gguf (metadata only) and <stem>.tensors.json (name, GGML type,
shape in ggml order), which tests/gguf_files.sparse_file() turns into a full-size sparse GGUF.

Run: .venv/bin/python scripts/oracle/reconstruct_public_gguf.py
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import gguf

from kvplan.sources.llamacpp_log import read_log
from kvplan.sources.log_model import metadata_of
from kvplan.sources.values import T_BOOL, T_F32, T_I32, T_STRING, T_U32, ArrayValue

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "tests" / "fixtures" / "logs" / "llamacpp" / "public"
OUT = ROOT / "tests" / "fixtures" / "oracle" / "file"
T = gguf.GGMLQuantizationType
_GT = {T_U32: gguf.GGUFValueType.UINT32, T_I32: gguf.GGUFValueType.INT32, T_F32: gguf.GGUFValueType.FLOAT32,
       T_BOOL: gguf.GGUFValueType.BOOL, T_STRING: gguf.GGUFValueType.STRING}  # fmt: skip

Tensor = tuple[str, T, tuple[int, ...]]  # name, type, shape (ggml order: ne0 first)


def gpt_oss(kv: dict[str, object]) -> list[Tensor]:
    e, v = int(kv["gpt-oss.embedding_length"]), 201088  # type: ignore[call-overload]
    h, hkv, d = int(kv["gpt-oss.attention.head_count"]), int(kv["gpt-oss.attention.head_count_kv"]), 64  # type: ignore[call-overload]
    x, ff = int(kv["gpt-oss.expert_count"]), int(kv["gpt-oss.expert_feed_forward_length"])  # type: ignore[call-overload]
    out: list[Tensor] = [("token_embd.weight", T.Q8_0, (e, v))]
    for i in range(int(kv["gpt-oss.block_count"])):  # type: ignore[call-overload]
        b = f"blk.{i}."
        out += [
            (b + "attn_norm.weight", T.F32, (e,)),
            (b + "attn_q.weight", T.Q8_0, (e, h * d)), (b + "attn_q.bias", T.F32, (h * d,)),
            (b + "attn_k.weight", T.Q8_0, (e, hkv * d)), (b + "attn_k.bias", T.F32, (hkv * d,)),
            (b + "attn_v.weight", T.Q8_0, (e, hkv * d)), (b + "attn_v.bias", T.F32, (hkv * d,)),
            (b + "attn_output.weight", T.Q8_0, (h * d, e)), (b + "attn_output.bias", T.F32, (e,)),
            (b + "attn_sinks.weight", T.F32, (h,)),
            (b + "post_attention_norm.weight", T.F32, (e,)),
            (b + "ffn_gate_inp.weight", T.F32, (e, x)), (b + "ffn_gate_inp.bias", T.F32, (x,)),
            (b + "ffn_gate_exps.weight", T.MXFP4, (e, ff, x)), (b + "ffn_gate_exps.bias", T.F32, (ff, x)),
            (b + "ffn_up_exps.weight", T.MXFP4, (e, ff, x)), (b + "ffn_up_exps.bias", T.F32, (ff, x)),
            (b + "ffn_down_exps.weight", T.MXFP4, (ff, e, x)), (b + "ffn_down_exps.bias", T.F32, (e, x)),
        ]  # fmt: skip
    return [*out, ("output_norm.weight", T.F32, (e,)), ("output.weight", T.Q8_0, (e, v))]


def deepseek2_early(kv: dict[str, object]) -> list[Tensor]:
    g = {k.removeprefix("deepseek2."): int(v) for k, v in kv.items() if k.startswith("deepseek2.")  # type: ignore[call-overload]
         and isinstance(v, int)}  # fmt: skip
    e, v, h, rank, rope = g["embedding_length"], g["vocab_size"], g["attention.head_count"], g[
        "attention.kv_lora_rank"], g["rope.dimension_count"]  # fmt: skip
    hk, hv, x, fe, ff = g["attention.key_length"], g["attention.value_length"], g["expert_count"], g[
        "expert_feed_forward_length"], g["feed_forward_length"]  # fmt: skip
    sh = g["expert_shared_count"] * fe
    out: list[Tensor] = [("token_embd.weight", T.Q4_0, (e, v))]
    for i in range(g["block_count"]):
        b = f"blk.{i}."
        out += [
            (b + "attn_norm.weight", T.F32, (e,)), (b + "attn_q.weight", T.Q4_0, (e, h * hk)),
            (b + "attn_kv_a_mqa.weight", T.Q4_0, (e, rank + rope)), (b + "attn_kv_a_norm.weight", T.F32, (rank,)),
            (b + "attn_kv_b.weight", T.Q4_0, (rank, h * (hk - rope + hv))),
            (b + "attn_output.weight", T.Q4_0, (h * hv, e)), (b + "ffn_norm.weight", T.F32, (e,)),
        ]  # fmt: skip
        if i < g["leading_dense_block_count"]:
            out += [(b + "ffn_gate.weight", T.Q4_0, (e, ff)), (b + "ffn_up.weight", T.Q4_0, (e, ff)),
                    (b + "ffn_down.weight", T.Q4_0, (ff, e))]  # fmt: skip
        else:
            out += [
                (b + "ffn_gate_inp.weight", T.F32, (e, x)),
                (b + "ffn_gate_exps.weight", T.Q4_0, (e, fe, x)), (b + "ffn_up_exps.weight", T.Q4_0, (e, fe, x)),
                (b + "ffn_down_exps.weight", T.Q4_0, (fe, e, x)),
                (b + "ffn_gate_shexp.weight", T.Q4_0, (e, sh)), (b + "ffn_up_shexp.weight", T.Q4_0, (e, sh)),
                (b + "ffn_down_shexp.weight", T.Q4_0, (sh, e)),
            ]  # fmt: skip
    return [*out, ("output_norm.weight", T.F32, (e,)), ("output.weight", T.Q6_K, (e, v))]


FILES = {
    "gpt-oss-20b-mxfp4": ("mcgyvr-gpt-oss-20b-rtx3060-c8192-np8.log", gpt_oss),
    "deepseek-coder-v2-lite-q4_0-early": ("mcgyvr-deepseek-coder-v2-lite-rtx3060-c16384-np8.log", deepseek2_early),
}


def _type_counts(log_path: Path) -> tuple[int, Counter[str]]:
    """The loader's tensor count and `- type NAME: N tensors` lines."""
    import re

    text = log_path.read_text()
    total = int(re.search(r"and (\d+) tensors from", text).group(1))  # type: ignore[union-attr]
    return total, Counter({m[0]: int(m[1]) for m in re.findall(r"- type\s+(\w+):\s+(\d+) tensors", text)})


def main() -> None:
    for stem, (log_name, tensors_of) in FILES.items():
        log = read_log(str(LOGS / log_name))
        kv, types = metadata_of(log, log_name)
        tensors = tensors_of(kv)
        total, counts = _type_counts(LOGS / log_name)
        mine = Counter(t.name.lower() for _, t, _ in tensors)
        counts = Counter({k.lower(): n for k, n in counts.items()})
        assert len(tensors) == total and mine == counts, (stem, len(tensors), total, mine, counts)
        w = gguf.GGUFWriter(str(OUT / f"{stem}.meta.gguf"), str(kv["general.architecture"]))
        for k, val in kv.items():
            if k == "general.architecture" or k.startswith("tokenizer.") or isinstance(val, ArrayValue):
                continue
            if k in types:
                w.add_key_value(k, val, _GT[types[k]])
        arch = str(kv["general.architecture"])
        tokens = kv.get("tokenizer.ggml.tokens")
        if f"{arch}.vocab_size" not in kv and isinstance(tokens, ArrayValue):  # the size the dump's token list states
            w.add_key_value(f"{arch}.vocab_size", tokens.count, gguf.GGUFValueType.UINT32)
        w.add_key_value("tokenizer.ggml.model", "no_vocab", gguf.GGUFValueType.STRING)  # (no tokens in the log)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_ti_data_to_file()
        w.close()
        doc = {
            "about": f"the tensors of {stem}.gguf as the public log {log_name} states them (count and types) and the "
            "metadata's shapes give them; written by scripts/oracle/reconstruct_public_gguf.py",
            "tensors": [[name, int(t), list(shape)] for name, t, shape in tensors],
        }
        (OUT / f"{stem}.tensors.json").write_text(json.dumps(doc, indent=0) + "\n")
        print(stem, len(tensors), dict(counts))


if __name__ == "__main__":
    main()
