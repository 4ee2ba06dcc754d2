"""The worst-case graphs of the architectures whose compute buffer kvplan reproduces, one builder per llama.cpp
model class (src/models/*.cpp), each a transcription of that class's graph constructor."""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.runtimes.llamacpp.compute import ggml
from kvplan.runtimes.llamacpp.compute.context import GraphContext, Reserve, Weights, _w
from kvplan.runtimes.llamacpp.compute.ggml import Graph


@dataclass(frozen=True, slots=True)
class Dims:
    """The hyperparameters a graph's shapes come from."""

    n_embd: int
    n_vocab: int
    n_layer: int
    n_head: int
    n_head_kv: int
    head_k: int
    head_v: int
    n_ff: int


def build_llama(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_llama::graph (src/models/llama.cpp), dense layers."""
    g = GraphContext(r, w)
    inp_l = g.inp_embd(d.n_embd, d.n_vocab)
    pos = g.inp_pos()
    g.attn_inp_kv(d.head_k, d.head_v, d.head_v * d.n_head_kv)
    out_ids = g.inp_out_ids()
    rope_factors = g.opt("rope_freqs", d.head_k // 2)
    for il in range(d.n_layer):
        inp_sa = inp_l
        cur = g.norm(inp_l, _w(d.n_embd, name="attn_norm"))
        q, k, v = g.qkv(cur, d.n_embd, d.head_k, d.n_head, d.n_head_kv, d.head_v)
        q = ggml.rope(q, pos, rope_factors)
        k = ggml.rope(k, pos, rope_factors)
        wo = _w(d.head_k * d.n_head, d.n_embd, name="attn_output")
        cur = g.attn_kv(il, wo, g.opt("attn_output.bias", d.n_embd), g.opt("attn_output.scale", 1), q, k, v,
                        d.n_head_kv, d.head_k, d.head_v)
        if il == d.n_layer - 1:
            cur = ggml.get_rows(cur, out_ids)
            inp_sa = ggml.get_rows(inp_sa, out_ids)
        ffn_inp = ggml.binary("ADD", cur, inp_sa)
        cur = g.norm(ffn_inp, _w(d.n_embd, name="ffn_norm"))
        cur = g.ffn_par(cur, d.n_embd, d.n_ff)
        cur = ggml.binary("ADD", cur, ffn_inp)
        inp_l = cur
    cur = g.norm(inp_l, _w(d.n_embd, name="output_norm"))
    ggml.set_output(cur)
    cur = g.lora_mm(_w(d.n_embd, d.n_vocab, name="output"), cur, g.output_scale())
    ggml.set_output(cur)
    g.gf.expand(cur)
    return g.gf


BUILDERS = {"llama": build_llama}
