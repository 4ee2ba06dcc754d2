"""llama.cpp's converter (convert_hf_to_gguf.py, conversion/*.py), ported for the keys memory depends on.

A Hugging Face ``config.json`` → the GGUF key/values the vendored converter writes for it: the hparams it
reads (transformers' defaults, multimodal text parts), TextModel's keys, and each model class's own
``set_gguf_parameters`` where it writes more or otherwise. Proven on every registered architecture against
the converter itself (tests/fixtures/hf_conversion.json, scripts/record_hf_configs.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from kvplan.errors import BadInputError, UnknownArchitectureError
from kvplan.sources.metadata import LLAMA_MAX_LAYERS, MAMBA_PLACEHOLDER_CTX
from kvplan.sources.values import T_BOOL, T_I32, ArrayValue

U32_MAX = 0xFFFFFFFF

#: the keys that name a multimodal checkpoint's language model (ModelBase.load_hparams renames them text_config)
_TEXT_PARTS = ("llm_config", "lm_config", "language_config", "lfm")


class _Config:
    """The hparams the converter reads (``cfg``), with the file as it is (``raw``: a few classes read keys
    from it directly) and the MTP layers the checkpoint's tensor names show (``mtp_layers``)."""

    def __init__(self, cfg: dict[str, Any], path: str, raw: dict[str, Any] | None = None, mtp_layers: int = 0) -> None:
        self.cfg = cfg
        self.path = path
        self.raw = raw
        self.mtp_layers = mtp_layers

    def first(self, *names: str, required: bool = True, default: Any = None) -> Any:
        """TextModel.find_hparam: the value of the first of ``names`` the config has (null counts as absent
        only after that key is chosen, as the converter does); ``default`` where it has none."""
        for n in names:
            if n in self.cfg:
                if self.cfg[n] is not None:
                    return self.cfg[n]
                break
        if required:
            raise BadInputError(f"{self.path}: none of {', '.join(names)} is set (needed for the KV layout)")
        return default

    def get(self, name: str, default: Any = None) -> Any:
        """hparams.get(name, default)."""
        return self.cfg.get(name, default)

    def int(self, *names: str, required: bool = True, default: int | None = None, minimum: int = 0) -> Any:
        """An unsigned 32-bit count (what the converter writes as u32), at least ``minimum``."""
        v = self.first(*names, required=required, default=default)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not minimum <= v <= U32_MAX or int(v) != v:
            raise BadInputError(f"{self.path}: {names[0]} must be an integer from {minimum} to {U32_MAX}, not {v!r}")
        return int(v)


def _count(c: _Config, *names: str) -> Any:
    """A count the converter writes as it finds it: an integer, or a per-layer list of integers."""
    v = c.first(*names, required=False)
    if isinstance(v, list):
        if not v or len(v) > LLAMA_MAX_LAYERS or not all(type(x) is int and 0 <= x <= U32_MAX for x in v):
            raise BadInputError(f"{c.path}: {names[0]} must be an integer or a list of integers, not {v!r}")
        return ArrayValue(T_I32, len(v), tuple(v))
    return c.int(*names, required=False)


def _common(c: _Config) -> dict[str, Any]:
    """TextModel.__init__ and TextModel.set_gguf_parameters (conversion/base.py): the keys every class writes."""
    n_layers = c.int("n_layers", "num_hidden_layers", "n_layer", "num_layers", minimum=1)
    if n_layers > LLAMA_MAX_LAYERS:  # before any per-layer work
        raise BadInputError(f"{c.path}: num_hidden_layers = {n_layers} is more than llama.cpp's {LLAMA_MAX_LAYERS}")
    kv: dict[str, Any] = {"block_count": n_layers}
    values = {
        "context_length": c.int(*_CTX_KEYS, required=False),
        "embedding_length": c.int("hidden_size", "n_embd", "dim", required=False),
        "feed_forward_length": _count(c, *_FF_KEYS),
        "attention.head_count": _count(c, "num_attention_heads", "n_head", "n_heads"),
        "attention.head_count_kv": _count(c, "num_key_value_heads", "n_kv_heads"),
    }
    kv.update({k: v for k, v in values.items() if v is not None})
    if c.cfg.get("is_causal") is False:
        kv["attention.causal"] = False
    head_dim = c.int("head_dim", required=False)
    if head_dim is not None:
        kv["attention.key_length"] = head_dim
        kv["attention.value_length"] = head_dim
    _experts(
        kv,
        c.first("num_local_experts", "num_experts", "n_routed_experts", required=False),
        c.first("num_experts_per_tok", "num_experts_per_token", "top_k_experts", required=False),
    )
    return kv


def _experts(kv: dict[str, Any], count: Any, used: Any) -> None:
    """expert_count / expert_used_count as the converter writes them (only the roofline reads them)."""
    if count is not None:
        kv["expert_count"] = count
    if used is not None:
        kv["expert_used_count"] = used


_CTX_KEYS = ("max_position_embeddings", "n_ctx", "n_positions", "max_length", "max_sequence_length", "model_max_length")
_FF_KEYS = ("prefix_dense_intermediate_size", "dense_intermediate_size", "intermediate_size", "n_inner", "hidden_dim")


Rule = Callable[["_Config", dict[str, Any]], None]


def _arr(values: list[Any], element: int = T_I32) -> ArrayValue:
    return ArrayValue(element, len(values), tuple(values))


def _swa(c: _Config, kv: dict[str, Any]) -> None:
    window = c.int("sliding_window", required=False)
    if window is not None:
        kv["attention.sliding_window"] = window


def _swa_pattern(c: _Config, kv: dict[str, Any], key: str = "layer_types") -> None:
    """add_sliding_window_pattern([t == "sliding_attention" for t in layer_types])."""
    types = c.first(key)
    if not isinstance(types, list):
        raise BadInputError(f"{c.path}: {key} must be a list of layer types")
    kv["attention.sliding_window_pattern"] = _arr([t == "sliding_attention" for t in types], T_BOOL)


def _leading_dense(c: _Config, kv: dict[str, Any], key: str = "first_k_dense_replace") -> None:
    kv["leading_dense_block_count"] = c.int(key)


def _nextn(c: _Config, kv: dict[str, Any], *, count_in_blocks: bool = True, always: bool = False) -> None:
    """MTP blocks kept by the conversion: block_count grows, nextn_predict_layers says by how many."""
    n = c.int("num_nextn_predict_layers", required=False)
    if n is None and not always:
        return
    if count_in_blocks:
        kv["block_count"] += n or 0
    kv["nextn_predict_layers"] = n or 0


def _encoder(c: _Config, kv: dict[str, Any]) -> None:
    """BERT-likes and diffusion LMs: add_causal_attention(False)."""
    kv["attention.causal"] = False


def _roberta(c: _Config, kv: dict[str, Any]) -> None:
    """RobertaModel / XLMRobertaModel: positions start after the padding id (max_position_embeddings less)."""
    pad = c.get("pad_token_id")
    if pad is not None and "max_position_embeddings" in c.cfg:
        kv["context_length"] = c.int("max_position_embeddings") - (1 + pad)
    _encoder(c, kv)


def _modern_bert(c: _Config, kv: dict[str, Any]) -> None:
    _encoder(c, kv)
    kv["attention.sliding_window"] = c.int("local_attention")
    every = c.get("global_attn_every_n_layers")
    if every is not None:
        kv["attention.sliding_window_pattern"] = c.int("global_attn_every_n_layers")


def _replace(kv: dict[str, Any], block_count: int, **keys: Any) -> None:
    """A class that writes its keys itself (no TextModel.set_gguf_parameters)."""
    kv.clear()
    kv["block_count"] = block_count
    kv.update({k.replace("__", "."): v for k, v in keys.items() if v is not None})


def _n_head(c: _Config, *names: str) -> int:
    return int(c.int(*names, minimum=1))


def _bloom(c: _Config, kv: dict[str, Any]) -> None:
    n_embd = c.get("hidden_size", c.get("n_embed"))
    n_head = c.get("n_head", c.get("num_attention_heads"))
    if not isinstance(n_embd, int) or not isinstance(n_head, int):
        raise BadInputError(f"{c.path}: hidden_size and n_head must be set")
    _replace(
        kv,
        kv["block_count"],
        context_length=c.get("seq_length", n_embd),
        embedding_length=n_embd,
        attention__head_count=n_head,
        attention__head_count_kv=n_head,
    )


def _jais(c: _Config, kv: dict[str, Any]) -> None:
    """conversion/jais.py JaisModel: its own keys (n_positions, n_embd, n_inner, n_head; MHA, ALiBi)."""
    if c.get("activation_function") != "swiglu" or c.get("position_embedding_type") != "alibi":
        raise BadInputError(f"{c.path}: JAIS converts with activation_function swiglu and ALiBi positions only")
    _replace(
        kv,
        kv["block_count"],
        context_length=c.int("n_positions"),
        embedding_length=c.int("n_embd"),
        feed_forward_length=c.int("n_inner"),
        attention__head_count=_n_head(c, "n_head"),
    )


def _falcon(c: _Config, kv: dict[str, Any]) -> None:
    n_head = c.get("num_attention_heads")
    if n_head is None:
        n_head = c.int("n_head")
    n_head_kv = c.get("num_kv_heads")
    if n_head_kv is None:
        n_head_kv = c.get("n_head_kv", 1)
    _replace(
        kv,
        kv["block_count"],
        context_length=2048,
        embedding_length=c.int("hidden_size"),
        attention__head_count=n_head,
        attention__head_count_kv=n_head_kv,
    )


def _starcoder(c: _Config, kv: dict[str, Any]) -> None:
    _replace(
        kv,
        kv["block_count"],
        context_length=c.int("n_positions"),
        embedding_length=c.int("n_embd"),
        attention__head_count=c.int("n_head"),
        attention__head_count_kv=1,
    )


def _refact(c: _Config, kv: dict[str, Any]) -> None:
    _replace(
        kv,
        kv["block_count"],
        context_length=c.int("n_positions"),
        embedding_length=c.int("n_embd"),
        attention__head_count=c.int("n_head"),
        attention__head_count_kv=1,
    )


def _codeshell(c: _Config, kv: dict[str, Any]) -> None:
    _replace(
        kv,
        kv["block_count"],
        context_length=c.int("n_positions"),
        embedding_length=c.int("n_embd"),
        attention__head_count=c.int("n_head"),
        attention__head_count_kv=c.int("num_query_groups"),
    )


def _mpt(c: _Config, kv: dict[str, Any]) -> None:
    attn = c.first("attn_config")
    if not isinstance(attn, dict):
        raise BadInputError(f"{c.path}: attn_config must be an object")
    _replace(
        kv,
        kv["block_count"],
        context_length=c.int("max_seq_len"),
        embedding_length=c.int("d_model"),
        attention__head_count=c.int("n_heads"),
        attention__head_count_kv=_Config(attn, f"{c.path}: attn_config").int("kv_n_heads", required=False) or None,
    )


def _dbrx(c: _Config, kv: dict[str, Any]) -> None:
    attn = c.first("attn_config")
    if not isinstance(attn, dict):
        raise BadInputError(f"{c.path}: attn_config must be an object")
    _replace(
        kv,
        kv["block_count"],
        context_length=c.int("max_seq_len"),
        embedding_length=c.int("d_model"),
        attention__head_count=c.int("n_heads"),
        attention__head_count_kv=_Config(attn, f"{c.path}: attn_config").int("kv_n_heads"),
    )
    ffn = c.first("ffn_config", required=False)
    if isinstance(ffn, dict):
        _experts(kv, ffn.get("moe_num_experts"), ffn.get("moe_top_k"))


def _chatglm(c: _Config, kv: dict[str, Any]) -> None:
    n_embd = c.get("hidden_size", c.get("n_embed"))
    n_head = c.get("n_head", c.get("num_attention_heads"))
    if not isinstance(n_embd, int) or not isinstance(n_head, int):
        raise BadInputError(f"{c.path}: hidden_size and num_attention_heads must be set")
    _replace(
        kv,
        kv["block_count"],
        context_length=c.get("seq_length", n_embd),
        embedding_length=n_embd,
        attention__head_count=n_head,
        attention__head_count_kv=c.get("multi_query_group_num", c.get("num_key_value_heads", n_head)),
    )


def _phi2(c: _Config, kv: dict[str, Any]) -> None:
    n_head = c.int("num_attention_heads", "n_head")
    _replace(
        kv,
        kv["block_count"],
        context_length=c.int("n_positions", "max_position_embeddings"),
        embedding_length=c.int("hidden_size", "n_embd"),
        attention__head_count=n_head,
        attention__head_count_kv=n_head,
    )


def _phi3(c: _Config, kv: dict[str, Any]) -> None:
    _replace(
        kv,
        kv["block_count"],
        context_length=c.int("n_positions", "max_position_embeddings"),
        embedding_length=c.int("hidden_size", "n_embd"),
        attention__head_count=c.int("num_attention_heads", "n_head"),
        attention__head_count_kv=c.int("num_key_value_heads", "n_head_kv"),
        attention__sliding_window=c.int("sliding_window", required=False) or 0,
    )


def _phimoe(c: _Config, kv: dict[str, Any]) -> None:
    """conversion/phi.py PhiMoeModel: Phi-3's keys, then the experts."""
    _phi3(c, kv)
    _experts(
        kv,
        c.first("num_local_experts", "num_experts", required=False),
        c.first("num_experts_per_tok", "num_experts_per_token", required=False),
    )


def _plamo(c: _Config, kv: dict[str, Any]) -> None:
    _replace(
        kv,
        kv["block_count"],
        context_length=4096,
        embedding_length=c.int("hidden_size"),
        attention__head_count=c.int("num_attention_heads"),
        attention__head_count_kv=5,
    )


def _gemma(c: _Config, kv: dict[str, Any]) -> None:
    """GemmaModel / Gemma2Model write their keys themselves (head_dim required)."""
    heads = c.int("num_attention_heads")
    _replace(
        kv,
        kv["block_count"],
        context_length=c.int("max_position_embeddings"),
        embedding_length=c.int("hidden_size"),
        attention__head_count=heads,
        attention__head_count_kv=c.int("num_key_value_heads") if "num_key_value_heads" in c.cfg else heads,
        attention__key_length=c.int("head_dim"),
        attention__value_length=c.int("head_dim"),
    )


def _gemma2(c: _Config, kv: dict[str, Any]) -> None:
    _gemma(c, kv)
    kv["attention.sliding_window"] = c.int("sliding_window")


def _gemma3(c: _Config, kv: dict[str, Any]) -> None:
    """Gemma3Model: transformers' defaults where official configs omit keys; the window from the file itself."""
    kv["context_length"] = c.get("max_position_embeddings", 131072)
    kv["attention.head_count"] = c.get("num_attention_heads", 8)
    kv["attention.key_length"] = kv["attention.value_length"] = c.get("head_dim", 256)
    if c.get("sliding_window_pattern") != 1:
        kv["attention.sliding_window"] = c.int("sliding_window")
    kv["attention.head_count_kv"] = c.get("num_key_value_heads", 4)


def _embedding_gemma(c: _Config, kv: dict[str, Any]) -> None:
    """EmbeddingGemma: the sliding_window of config.json as it is (Gemma3TextConfig adjusts it; PR 40700)."""
    _gemma3(c, kv)
    window = (c.raw or {}).get("sliding_window")
    if not _is_int(window):
        raise BadInputError(f"{c.path}: sliding_window is not set (the converter requires it)")
    kv["attention.sliding_window"] = window


def _gemma3n(c: _Config, kv: dict[str, Any]) -> None:
    _gemma3(c, kv)
    kv["attention.shared_kv_layers"] = c.int("num_kv_shared_layers")
    _swa_pattern(c, kv)


def _gemma4_full(c: _Config, key: str, per_layer: str) -> Any:
    """Gemma4Model: ``key``, else the first full-attention layer's ``per_layer`` in per_layer_config."""
    value = c.get(key)
    layers = c.get("per_layer_config")
    types = c.get("layer_types") or []
    if value is None and isinstance(layers, dict):
        for index, layer in layers.items():
            i = int(index) if str(index).isdigit() else -1
            if 0 <= i < len(types) and types[i] == "full_attention" and isinstance(layer, dict) and per_layer in layer:
                return layer[per_layer]
    return value


def _gemma4(c: _Config, kv: dict[str, Any]) -> None:
    """conversion/gemma.py Gemma4Model: full-attention layers with their own head size (and KV heads),
    the last num_kv_shared_layers reuse earlier layers' KV, per-layer embeddings optional."""
    _gemma3(c, kv)
    shared = c.int("num_kv_shared_layers")
    kv["attention.shared_kv_layers"] = shared
    kv["embedding_length_per_layer_input"] = c.get("hidden_size_per_layer_input") or 0
    _swa_pattern(c, kv)
    swa = list(kv["attention.sliding_window_pattern"].values)
    full = _gemma4_full(c, "global_head_dim", "head_dim")
    if not _is_int(full):
        raise BadInputError(f"{c.path}: global_head_dim is not set (the converter requires it)")
    kv["attention.key_length"] = kv["attention.value_length"] = full
    kv["attention.key_length_swa"] = kv["attention.value_length_swa"] = c.int("head_dim")
    if c.get("use_double_wide_mlp"):
        n_ff, blocks = c.int("intermediate_size"), kv["block_count"]
        kv["feed_forward_length"] = _arr([n_ff if il < blocks - shared else n_ff * 2 for il in range(blocks)])
    kv_full = _gemma4_full(c, "num_global_key_value_heads", "num_key_value_heads")
    kv_swa = c.get("num_key_value_heads")
    if _is_int(kv_full) and _is_int(kv_swa):
        kv["attention.head_count_kv"] = _arr([kv_swa if s else kv_full for s in swa])


def _mimo2(c: _Config, kv: dict[str, Any]) -> None:
    """conversion/mimo.py MimoV2Model: three MTP blocks always (the checkpoints' count, hard-coded), SWA
    on pattern 1 and on the MTP blocks, per-layer KV heads."""
    n_nextn = 3
    kv["block_count"] = c.int("num_hidden_layers") + n_nextn
    kv["nextn_predict_layers"] = n_nextn
    pattern = c.first("hybrid_layer_pattern")
    if not isinstance(pattern, list) or not all(type(x) is int for x in pattern):
        raise BadInputError(f"{c.path}: hybrid_layer_pattern must be a list of 0 / 1")
    hybrid = [*pattern, *([1] * n_nextn)]
    heads, heads_swa = c.int("num_key_value_heads"), c.int("swa_num_key_value_heads")
    kv["attention.head_count_kv"] = _arr([heads_swa if h == 1 else heads for h in hybrid])
    kv["attention.sliding_window"] = c.int("sliding_window")
    kv["attention.sliding_window_pattern"] = _arr(hybrid)
    kv["attention.value_length"] = c.int("v_head_dim")


def _hunyuan_moe(c: _Config, kv: dict[str, Any]) -> None:
    """conversion/hunyuan.py HunYuanMoEModel: NTK-alpha ("dynamic") RoPE means a 256k context, whatever
    max_position_embeddings says (the converter's own assumptions checked as it checks them)."""
    topk = c.get("moe_topk")
    if isinstance(topk, list) and topk:
        kv["expert_used_count"] = topk[0]  # the converter asserts every layer's is the same
    rope = c.get("rope_parameters") or c.get("rope_scaling") or {}
    if not isinstance(rope, dict) or rope.get("rope_type", rope.get("type")) != "dynamic":
        return
    dim = c.int("hidden_size") // c.int("num_attention_heads")
    if (rope.get("alpha", 1000), rope.get("rope_theta", 10000.0), dim) != (1000, 10000.0, 128) or c.get(
        "max_position_embeddings"
    ) not in (32 * 1024, 256 * 1024):
        raise BadInputError(f"{c.path}: HunYuan dynamic RoPE with other values than the converter assumes")
    kv["context_length"] = 256 * 1024


def openelm_ffn(multiplier: float, n_embd: int, divisor: int) -> int:
    """OpenELMModel._make_divisible(multiplier * n_embd, divisor): rounded to the divisor, never more than 10 %
    down."""
    v = multiplier * n_embd
    new = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new + divisor if new < 0.9 * v else new


def _is_number(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _openelm(c: _Config, kv: dict[str, Any]) -> None:
    """conversion/openelm.py OpenELMModel: per-layer query and KV heads, its own names for the sizes."""
    layers = c.int("num_transformer_layers", minimum=1)
    heads, kv_heads = c.first("num_query_heads"), c.first("num_kv_heads")
    for name, v in (("num_query_heads", heads), ("num_kv_heads", kv_heads)):
        if not isinstance(v, list) or len(v) != layers or not all(type(x) is int and x >= 0 for x in v):
            raise BadInputError(f"{c.path}: {name} must list one integer per layer ({layers})")
    head_dim = c.int("head_dim")
    mults, divisor = c.first("ffn_multipliers"), c.int("ffn_dim_divisor", minimum=1)
    if not isinstance(mults, list) or len(mults) != layers or not all(_is_number(x) and 0 < x < 1e6 for x in mults):
        raise BadInputError(f"{c.path}: ffn_multipliers must list one number per layer ({layers})")
    n_embd = c.int("model_dim")
    kv.update(
        {
            "block_count": layers,
            "context_length": c.int("max_context_length"),
            "embedding_length": n_embd,
            "feed_forward_length": _arr([openelm_ffn(m, n_embd, divisor) for m in mults]),
            "attention.head_count": _arr(heads),
            "attention.head_count_kv": _arr(kv_heads),
            "attention.key_length": head_dim,
            "attention.value_length": head_dim,
        }
    )


def _olmo2(c: _Config, kv: dict[str, Any]) -> None:
    if "sliding_window" in c.cfg:
        kv["attention.sliding_window"] = c.int("sliding_window")
        if "layer_types" in c.cfg:
            _swa_pattern(c, kv)
        else:
            n = c.int("num_hidden_layers")
            kv["attention.sliding_window_pattern"] = _arr([(i + 1) % 4 != 0 for i in range(n)], T_BOOL)


def _exaone4(c: _Config, kv: dict[str, Any]) -> None:
    if c.get("sliding_window") is None:
        return
    kv["attention.sliding_window"] = c.int("sliding_window")
    n = c.int("num_hidden_layers")
    if "layer_types" in c.cfg:
        _swa_pattern(c, kv)
    elif "sliding_window_pattern" in c.cfg:
        p = c.cfg["sliding_window_pattern"]
        flags: list[bool] = []
        if isinstance(p, str) and p:  # e.g. LLLG
            flags = [p[i % len(p)] == "L" for i in range(n)]
        if isinstance(p, int) and not isinstance(p, bool) and p:  # e.g. 4
            flags = [(i + 1) % p != 0 for i in range(n)]
        if len(flags) == n:
            kv["attention.sliding_window_pattern"] = _arr(flags, T_BOOL)


def _exaone_moe(c: _Config, kv: dict[str, Any]) -> None:
    _exaone4(c, kv)
    kv["block_count"] = c.int("num_hidden_layers") + c.int("num_nextn_predict_layers", required=False, default=0)
    kv["leading_dense_block_count"] = c.get("first_k_dense_replace", c.get("first_last_k_dense_replace", 0))
    kv["nextn_predict_layers"] = c.int("num_nextn_predict_layers", required=False, default=0)


def _granite_swa(c: _Config, kv: dict[str, Any]) -> None:
    kv["attention.sliding_window"] = c.get("sliding_window", 128)
    if c.get("layer_types"):
        _swa_pattern(c, kv)
    else:
        kv["attention.sliding_window_pattern"] = _arr([i % 4 != 0 for i in range(kv["block_count"])], T_BOOL)


def _cohere2moe(c: _Config, kv: dict[str, Any]) -> None:
    types = c.get("mlp_layer_types")
    lead = c.get("first_k_dense_replace", 0)
    if isinstance(types, list):
        lead = next((i for i, t in enumerate(types) if t != "dense"), len(types))
    kv["attention.sliding_window"] = c.int("sliding_window")
    _swa_pattern(c, kv)
    kv["leading_dense_block_count"] = lead
    n = c.int("num_nextn_predict_layers", required=False) or 0
    if n > 0:
        kv["block_count"] += n
        kv["nextn_predict_layers"] = n


def _command_r(c: _Config, kv: dict[str, Any]) -> None:
    kv["context_length"] = c.int("model_max_length", "max_position_embeddings")


def _mla(c: _Config, kv: dict[str, Any], lora: int) -> None:
    rope = c.int("qk_rope_head_dim")
    kv["attention.kv_lora_rank"] = lora
    kv["attention.key_length"] = lora + rope
    kv["attention.value_length"] = lora
    kv["attention.key_length_mla"] = c.int("qk_nope_head_dim") + rope
    kv["attention.value_length_mla"] = c.int("v_head_dim")


_DEEPSEEK_OCR = ("DeepseekOCRForCausalLM", "DeepseekOCR2ForCausalLM", "UnlimitedOCRForCausalLM")


def _deepseek2(c: _Config, kv: dict[str, Any]) -> None:
    """DeepseekV2Model: MLA as one KV head of kv_lora_rank + rope (the OCR variants keep plain MHA)."""
    archs = c.get("architectures") or [None]
    if archs[0] in _DEEPSEEK_OCR:
        kv["general.architecture"] = "deepseek2-ocr"
        window = c.get("sliding_window_size") or c.get("sliding_window")
        if window:
            kv["attention.sliding_window"] = window
    else:
        kv["attention.head_count_kv"] = 1
        _mla(c, kv, c.int("kv_lora_rank", required=False, default=512))
    first = c.get("first_k_dense_replace")
    if first is None:
        first = c.int("num_hidden_layers") if c.get("n_routed_experts") is None else 0
    kv["leading_dense_block_count"] = first


def _deepseek32(c: _Config, kv: dict[str, Any]) -> None:
    _deepseek2(c, kv)
    kv["block_count"] = c.int("num_hidden_layers") + (c.int("num_nextn_predict_layers", required=False) or 0)
    if c.get("num_nextn_predict_layers") is not None:
        kv["nextn_predict_layers"] = c.int("num_nextn_predict_layers")
    _indexer(c, kv)


def _indexer(c: _Config, kv: dict[str, Any]) -> None:
    kv["attention.indexer.head_count"] = c.int("index_n_heads")
    kv["attention.indexer.key_length"] = c.int("index_head_dim")
    kv["attention.indexer.top_k"] = c.int("index_topk")


def _glm_dsa(c: _Config, kv: dict[str, Any]) -> None:
    _deepseek2(c, kv)
    kv["block_count"] = c.int("num_hidden_layers") + (c.int("num_nextn_predict_layers", required=False) or 0)
    if c.get("num_nextn_predict_layers") is not None:
        kv["nextn_predict_layers"] = c.int("num_nextn_predict_layers")
    _indexer(c, kv)
    types = c.get("indexer_types")
    if isinstance(types, list):
        kv["attention.indexer.types"] = _arr([t == "full" for t in types], T_BOOL)


def _glm4moe_lite(c: _Config, kv: dict[str, Any]) -> None:
    _deepseek2(c, kv)
    n = c.int("num_nextn_predict_layers", required=False) or 0
    if n:
        kv["block_count"] = c.int("num_hidden_layers") + n
        kv["nextn_predict_layers"] = n


def _glm4moe(c: _Config, kv: dict[str, Any]) -> None:
    first = c.get("first_k_dense_replace")
    if first is not None:
        kv["leading_dense_block_count"] = first
    _nextn(c, kv)


def _bailing(c: _Config, kv: dict[str, Any]) -> None:
    _leading_dense(c, kv)


def _bailing2(c: _Config, kv: dict[str, Any]) -> None:
    n = c.get("num_nextn_predict_layers", 0)
    if n:
        kv["block_count"] = c.int("num_hidden_layers") + c.int("num_nextn_predict_layers")
    _leading_dense(c, kv)
    if c.get("num_nextn_predict_layers") is not None:
        kv["nextn_predict_layers"] = c.int("num_nextn_predict_layers")


def _ernie_moe(c: _Config, kv: dict[str, Any]) -> None:
    _leading_dense(c, kv, "moe_layer_start_index")
    _experts(kv, c.get("moe_num_experts"), c.get("moe_k"))


def _minicpm3(c: _Config, kv: dict[str, Any]) -> None:
    _replace(
        kv,
        kv["block_count"],
        context_length=c.int("max_position_embeddings"),
        embedding_length=c.int("hidden_size"),
        attention__head_count=c.int("num_attention_heads"),
        attention__head_count_kv=c.int("num_key_value_heads"),
        attention__kv_lora_rank=c.int("kv_lora_rank"),
        attention__key_length=c.int("qk_nope_head_dim") + c.int("qk_rope_head_dim"),
    )


def _plm(c: _Config, kv: dict[str, Any]) -> None:
    kv["attention.kv_lora_rank"] = c.int("kv_lora_rank")
    kv["attention.key_length"] = c.int("qk_nope_head_dim") + c.int("qk_rope_head_dim")
    kv["attention.value_length"] = c.int("v_head_dim")


def _hrm_text(c: _Config, kv: dict[str, Any]) -> None:
    per_stack = c.get("num_layers_per_stack") or c.int("num_hidden_layers")
    kv["block_count"] = per_stack * c.int("H_cycles") * (c.int("L_cycles") + 1)


def _llada(c: _Config, kv: dict[str, Any]) -> None:
    kv["context_length"] = c.get("max_sequence_length", 4096)
    kv["embedding_length"] = c.get("d_model", 4096)
    _encoder(c, kv)


def _t5(c: _Config, kv: dict[str, Any]) -> None:
    n_ctx = c.int("n_positions", required=False)
    _replace(
        kv,
        kv["block_count"],
        context_length=512 if n_ctx is None else n_ctx,
        embedding_length=c.int("d_model"),
        attention__head_count=c.int("num_heads"),
        attention__key_length=c.int("d_kv"),
        attention__value_length=c.int("d_kv"),
    )


def _qwen3next(c: _Config, kv: dict[str, Any]) -> None:
    """Qwen3NextModel (and Qwen3.5): gated delta-net state hparams; layer_types marks the recurrent layers."""
    v_heads = c.int("linear_num_value_heads")
    kv.update(
        {
            "ssm.conv_kernel": c.int("linear_conv_kernel_dim"),
            "ssm.state_size": c.int("linear_key_head_dim"),
            "ssm.group_count": c.int("linear_num_key_heads"),
            "ssm.time_step_rank": v_heads,
            "ssm.inner_size": c.int("linear_value_head_dim") * v_heads,
        }
    )
    n_layer = c.int("num_hidden_layers")
    mtp = c.int("mtp_num_hidden_layers", required=False, default=0) or c.mtp_layers
    kv["block_count"] = n_layer + mtp
    if mtp:
        kv["nextn_predict_layers"] = mtp
    types = c.get("layer_types")
    if types is not None:
        if not isinstance(types, list) or len(types) != n_layer:
            raise BadInputError(f"{c.path}: layer_types must list num_hidden_layers ({n_layer}) entries")
        flags = [t == "linear_attention" for t in types] + [False] * mtp
        kv["attention.recurrent_layers"] = _arr(flags, T_BOOL)
    kv["full_attention_interval"] = c.int("full_attention_interval", required=False, default=4)


def _jamba(c: _Config, kv: dict[str, Any]) -> None:
    d_model = c.int("hidden_size", "mamba_d_model")
    n, heads = kv["block_count"], c.int("num_key_value_heads")
    offset, period = c.int("attn_layer_offset"), c.int("attn_layer_period", minimum=1)
    flags = [0] * min(offset, n) + [heads if (i - offset) % period == 0 else 0 for i in range(offset, n)]
    _replace(
        kv,
        n,
        context_length=c.int("max_position_embeddings", "n_ctx"),
        embedding_length=d_model,
        attention__head_count=c.int("num_attention_heads"),
        attention__head_count_kv=_arr(flags),
        ssm__conv_kernel=c.int("mamba_d_conv", required=False) or 4,
        ssm__inner_size=c.int("mamba_expand") * d_model,
        ssm__state_size=c.int("mamba_d_state", required=False) or 16,
        ssm__time_step_rank=c.int("mamba_dt_rank", required=False) or -(d_model // -16),
        expert_count=c.first("num_local_experts", "num_experts", required=False),
        expert_used_count=c.first("num_experts_per_tok", "num_experts_per_token", required=False),
    )


def _mamba(c: _Config, kv: dict[str, Any]) -> None:
    """MambaModel: context 2^20 ("arbitrary value"), no attention."""
    d_model = c.int("hidden_size", "d_model")
    d_inner = c.int("intermediate_size", "d_inner", required=False) or 2 * d_model
    if d_inner != 2 * d_model:
        raise BadInputError(f"{c.path}: intermediate_size must be 2 x hidden_size (llama.cpp's converter asserts it)")
    _replace(
        kv,
        kv["block_count"],
        context_length=MAMBA_PLACEHOLDER_CTX,
        embedding_length=d_model,
        attention__head_count=0,
        ssm__conv_kernel=c.int("conv_kernel", "d_conv", required=False) or 4,
        ssm__inner_size=d_inner,
        ssm__state_size=c.int("state_size", "d_state", required=False) or 16,
        ssm__time_step_rank=c.int("time_step_rank", "dt_rank", required=False) or -(d_model // -16),
    )


def _mamba2_dims(c: _Config) -> tuple[int, int]:
    """Mamba2Model.__init__: d_model and d_inner."""
    d_model = c.int("hidden_size", "d_model", "dim")
    expand = c.int("mamba_expand", "expand", required=False) or 2
    return d_model, c.int("mamba_d_ssm", "intermediate_size", "d_inner", required=False) or expand * d_model


def _mamba2(c: _Config, kv: dict[str, Any]) -> None:
    d_model, d_inner = _mamba2_dims(c)
    head_dim = c.int("mamba_d_head", "head_dim", required=False) or 64
    if d_inner % head_dim:
        raise BadInputError(f"{c.path}: the Mamba-2 inner size {d_inner} is not a multiple of head_dim {head_dim}")
    _replace(
        kv,
        kv["block_count"],
        context_length=MAMBA_PLACEHOLDER_CTX,
        embedding_length=d_model,
        attention__head_count=0,
        ssm__conv_kernel=c.int("conv_kernel", "d_conv", required=False) or 4,
        ssm__inner_size=d_inner,
        ssm__state_size=c.int("state_size", "d_state", required=False) or 128,
        ssm__time_step_rank=d_inner // head_dim,
        ssm__group_count=c.int("n_groups", required=False) or 1,
    )


def _per_layer_kv_heads(kv: dict[str, Any], attention: list[bool]) -> None:
    """head_count_kv as a per-layer array: the KV heads on attention layers, 0 on state layers."""
    heads = kv.get("attention.head_count_kv") or kv["attention.head_count"]
    kv["attention.head_count_kv"] = _arr([heads if a else 0 for a in attention])


def _nemotron_h(c: _Config, kv: dict[str, Any]) -> None:
    """conversion/nemotron.py NemotronHModel: M = Mamba-2, * = attention, - = MLP (per-layer n_ff)."""
    pattern = c.first("hybrid_override_pattern", "layers_block_type")
    if isinstance(pattern, str):
        kinds = ["mamba" if ch == "M" else "attention" if ch == "*" else "mlp" for ch in pattern]
    elif isinstance(pattern, list) and all(isinstance(t, str) for t in pattern):
        kinds = [
            "mamba"
            if t in ("mamba", "linear_attention")
            else "attention"
            if t in ("attention", "full_attention")
            else "mlp"
            for t in pattern
        ]
    else:
        raise BadInputError(f"{c.path}: hybrid_override_pattern must be a string such as 'M-M*-' or a list of types")
    if len(kinds) != kv["block_count"]:
        raise BadInputError(
            f"{c.path}: hybrid_override_pattern has {len(kinds)} layers, num_hidden_layers {kv['block_count']}"
        )
    _per_layer_kv_heads(kv, [k == "attention" for k in kinds])
    if "mamba" in kinds:  # GraniteHybridModel: no RoPE, add_context_length(2**20)
        kv["context_length"] = MAMBA_PLACEHOLDER_CTX
    n_ff = c.int("intermediate_size", required=False, default=0)
    flags = tuple(n_ff if k == "mlp" else 0 for k in kinds)
    kv["feed_forward_length"] = ArrayValue(T_I32, len(flags), flags)
    head_dim = c.int("head_dim", "attention_head_dim")
    kv["attention.key_length"] = kv["attention.value_length"] = head_dim
    heads = c.int("mamba_num_heads", minimum=1)
    kv.update(
        {
            "ssm.conv_kernel": c.int("conv_kernel", "mamba_d_conv"),
            "ssm.state_size": c.int("ssm_state_size", "state_size", "mamba_d_state"),
            "ssm.group_count": c.int("n_groups", "mamba_n_groups"),
            "ssm.inner_size": heads * c.int("mamba_head_dim"),
            "ssm.time_step_rank": heads,
        }
    )


def _granitehybrid(c: _Config, kv: dict[str, Any]) -> None:
    """conversion/granite.py GraniteHybridModel: attention where layer_types says so (or by index / period)."""
    n = kv["block_count"]
    types = c.first("layer_types", required=False)
    if isinstance(types, list):
        attention = [t == "attention" for t in types]
    elif isinstance(c.first("attn_layer_indices", required=False), list):
        indices = set(c.first("attn_layer_indices"))
        attention = [i in indices for i in range(n)]
    else:
        period, offset = c.int("attn_layer_period", minimum=1), c.int("attn_layer_offset")
        attention = [i % period == offset for i in range(n)]
    if len(attention) != n:
        raise BadInputError(f"{c.path}: layer_types has {len(attention)} entries, num_hidden_layers {n}")
    if all(attention):  # a non-hybrid member of the family converts as plain Granite (MoE)
        moe = c.first("num_experts_per_tok", "num_experts_per_token", required=False) is not None
        kv["general.architecture"] = "granitemoe" if moe else "granite"
    elif "BambaForCausalLM" not in (c.get("architectures") or []):
        kv["context_length"] = MAMBA_PLACEHOLDER_CTX  # no RoPE: add_context_length(2**20)
    _per_layer_kv_heads(kv, attention)
    kv.pop("attention.key_length", None)  # llama.cpp's Granite ignores head_dim (hidden / heads)
    kv.pop("attention.value_length", None)
    kv.update(
        {
            "ssm.conv_kernel": c.int("mamba_d_conv", "conv_kernel"),
            "ssm.state_size": c.int("mamba_d_state", "state_size"),
            "ssm.group_count": c.int("mamba_n_groups", "n_groups"),
            "ssm.inner_size": c.int("mamba_expand", "expand") * kv["embedding_length"],
            "ssm.time_step_rank": c.int("mamba_n_heads", "mamba_num_heads"),
        }
    )


def _falcon_h1(c: _Config, kv: dict[str, Any]) -> None:
    """conversion/falcon_h1.py: attention and Mamba-2 in every layer."""
    d_inner = c.int("mamba_d_ssm")
    kv.update(
        {
            "ssm.conv_kernel": c.int("mamba_d_conv", required=False, default=4),
            "ssm.state_size": c.int("mamba_d_state", required=False, default=128),
            "ssm.group_count": c.int("mamba_n_groups", required=False, default=1),
            "ssm.inner_size": d_inner,
            "ssm.time_step_rank": d_inner // c.int("mamba_d_head", required=False, default=64, minimum=1),
        }
    )


def _lfm2(c: _Config, kv: dict[str, Any]) -> None:
    """conversion/lfm2.py: KV heads on full_attention layers only; the conv layers keep L_cache - 1 columns."""
    types = c.first("layer_types")
    if not isinstance(types, list) or len(types) != kv["block_count"]:
        raise BadInputError(f"{c.path}: layer_types must list num_hidden_layers entries")
    _per_layer_kv_heads(kv, [t != "conv" for t in types])
    kv["shortconv.l_cache"] = c.int("conv_L_cache")


def _kimi_linear(c: _Config, kv: dict[str, Any]) -> None:
    """conversion/kimi_linear.py: MLA (as one KV head) on linear_attn_config.full_attn_layers (1-based), KDA else."""
    la = c.first("linear_attn_config")
    if not isinstance(la, dict) or not isinstance(la.get("full_attn_layers"), list):
        raise BadInputError(f"{c.path}: linear_attn_config.full_attn_layers is not set (needed for the layer kinds)")
    full = set(la["full_attn_layers"])
    kv["attention.head_count_kv"] = 1
    _per_layer_kv_heads(kv, [i + 1 in full for i in range(kv["block_count"])])
    sub = _Config(la, f"{c.path}: linear_attn_config")
    kv["ssm.conv_kernel"] = sub.int("short_conv_kernel_size")
    kv["kda.head_dim"] = sub.int("head_dim")
    lora, rope = c.int("kv_lora_rank"), c.int("qk_rope_head_dim")
    kv["attention.kv_lora_rank"] = lora
    kv["attention.key_length"] = lora + rope
    kv["attention.key_length_mla"] = c.int("qk_nope_head_dim") + rope
    kv["attention.value_length_mla"] = c.int("v_head_dim")


def _maple(c: _Config, kv: dict[str, Any]) -> None:
    """conversion/maple.py MapleModel: sliding window and its per-layer pattern."""
    _swa(c, kv)
    _swa_pattern(c, kv)


def _step35(c: _Config, kv: dict[str, Any]) -> None:
    """conversion/step3.py Step35Model: MTP blocks appended, per-layer heads (SWA layers take
    attention_other_setting's), layer types padded to the blocks with full attention."""
    n = c.int("num_nextn_predict_layers", required=False) or 0
    kv["block_count"] += n
    if n:
        kv["nextn_predict_layers"] = n
    types = c.first("layer_types", required=False) or []
    if not isinstance(types, list):
        raise BadInputError(f"{c.path}: layer_types must be a list of layer types")
    blocks = kv["block_count"]
    types = (list(types) + ["full_attention"] * blocks)[:blocks]
    other = c.first("attention_other_setting", required=False) or {}
    if not isinstance(other, dict):
        raise BadInputError(f"{c.path}: attention_other_setting must be a mapping")
    heads = c.int("num_attention_heads")
    groups = c.int("num_attention_groups")
    swa_heads = _Config(other, c.path).int("num_attention_heads", required=False) or heads
    swa_groups = _Config(other, c.path).int("num_attention_groups", required=False) or groups
    swa = [t == "sliding_attention" for t in types]
    kv["attention.head_count"] = _arr([swa_heads if s else heads for s in swa])
    kv["attention.head_count_kv"] = _arr([swa_groups if s else groups for s in swa])
    kv["attention.sliding_window"] = c.int("sliding_window")
    kv["attention.sliding_window_pattern"] = _arr(swa, T_BOOL)
    kv["attention.value_length"] = c.int("head_dim")


def _rwkv6(c: _Config, kv: dict[str, Any]) -> None:
    """Rwkv6Model: not context limited (2^20 written), no attention."""
    _replace(
        kv,
        kv["block_count"],
        context_length=1048576,
        embedding_length=c.int("hidden_size"),
        wkv__head_size=c.int("head_size"),
        attention__head_count=0,
    )


def _rwkv6qwen2(c: _Config, kv: dict[str, Any]) -> None:
    hidden, heads = c.int("hidden_size"), _n_head(c, "num_attention_heads")
    _replace(
        kv,
        kv["block_count"],
        context_length=1048576,
        embedding_length=hidden,
        wkv__head_size=hidden // heads,
        token_shift_count=1,
        attention__head_count_kv=c.int("num_key_value_heads"),
        attention__head_count=0,
    )


def _rwkv7(c: _Config, kv: dict[str, Any]) -> None:
    head = c.cfg["head_size"] if "head_size" in c.cfg and "layer_norm_epsilon" in c.cfg else c.int("head_dim")
    _replace(
        kv,
        kv["block_count"],
        context_length=1048576,
        embedding_length=c.int("hidden_size"),
        wkv__head_size=head,
        attention__head_count=0,
    )


def _arwkv7(c: _Config, kv: dict[str, Any]) -> None:
    _replace(
        kv,
        kv["block_count"],
        context_length=1048576,
        embedding_length=c.int("hidden_size"),
        wkv__head_size=c.int("head_size"),
        token_shift_count=1,
        attention__head_count=0,
    )


def _plamo2(c: _Config, kv: dict[str, Any]) -> None:
    """Plamo2Model: Mamba layers where (i % mamba_step) != mamba_step // 2 (the last layer attends when short)."""
    n = kv["block_count"]
    step = c.get("mamba_step", 2)
    kv.clear()
    kv["block_count"] = n
    if c.get("mamba_enabled", True):
        if not _is_int(step) or step < 1:
            raise BadInputError(f"{c.path}: mamba_step must be a positive integer")
        mamba = [(i != n - 1) if n <= step // 2 else (i % step) != (step // 2) for i in range(n)]
        kv["attention.head_count_kv"] = _arr([0 if m else c.get("num_key_value_heads", 4) for m in mamba])
        kv["attention.head_count"] = _arr([0 if m else c.get("num_attention_heads", 32) for m in mamba])
    per_head = c.get("hidden_size_per_head", 128)
    heads = c.get("mamba_num_heads", 64)
    kv.update(
        {
            "context_length": c.get("max_position_embeddings", 2048),
            "embedding_length": c.get("hidden_size", 4096),
            "attention.key_length": per_head,
            "attention.value_length": per_head,
            "ssm.state_size": c.get("mamba_d_state", 64),
            "ssm.conv_kernel": c.get("mamba_d_conv", 4),
            "ssm.time_step_rank": heads,
            "ssm.inner_size": heads * per_head if _is_int(heads) and _is_int(per_head) else None,
            "ssm.group_count": 0,
        }
    )


def _kimi(c: _Config, kv: dict[str, Any]) -> None:
    _kimi_linear(c, kv)
    kv["leading_dense_block_count"] = c.int("first_k_dense_replace")


def _lfm2_moe(c: _Config, kv: dict[str, Any]) -> None:
    types = c.first("layer_types")
    if not isinstance(types, list) or len(types) != kv["block_count"]:
        raise BadInputError(f"{c.path}: layer_types must list num_hidden_layers entries")
    _per_layer_kv_heads(kv, [t == "full_attention" for t in types])
    kv["shortconv.l_cache"] = c.int("conv_L_cache")
    kv["leading_dense_block_count"] = c.int("num_dense_layers")


def _lfm2_colbert(c: _Config, kv: dict[str, Any]) -> None:
    _lfm2(c, kv)
    if (c.get("architectures") or [None])[0] == "Lfm2BidirectionalModel":
        _encoder(c, kv)


def _mistral3(c: _Config, kv: dict[str, Any]) -> None:
    """Mistral3Model: a Mistral-4 text part converts as DeepSeek-V2 (MLA), any other as Llama."""
    if c.get("model_type") == "mistral4":
        _deepseek2(c, kv)
        kv["general.architecture"] = "mistral4"


def _afmoe(c: _Config, kv: dict[str, Any]) -> None:
    if c.get("num_dense_layers") is not None:
        kv["leading_dense_block_count"] = c.int("num_dense_layers")
    if c.get("sliding_window") is not None:
        kv["attention.sliding_window"] = c.int("sliding_window")


def _llama4(c: _Config, kv: dict[str, Any]) -> None:
    types = c.get("layer_types")
    if isinstance(types, list) and all(t == "full_attention" for t in types):
        kv["attention.sliding_window"] = 0


def _gpt_oss(c: _Config, kv: dict[str, Any]) -> None:
    kv["attention.sliding_window"] = c.int("sliding_window")


RULES: dict[str, Rule] = {
    # encoders and diffusion LMs (bidirectional attention)
    "BertModel": _encoder,
    "EuroBertModel": _encoder,
    "DreamModel": _encoder,
    "LLaDAMoEModel": _encoder,
    "RND1Model": _encoder,
    "RobertaModel": _roberta,
    "XLMRobertaModel": _roberta,
    "ModernBertModel": _modern_bert,
    "LLaDAModel": _llada,
    "T5Model": _t5,
    "T5EncoderModel": _t5,
    # classes that write their keys themselves
    "BloomModel": _bloom,
    "FalconModel": _falcon,
    "StarCoderModel": _starcoder,
    "RefactModel": _refact,
    "CodeShellModel": _codeshell,
    "MPTModel": _mpt,
    "DbrxModel": _dbrx,
    "ChatGLMModel": _chatglm,
    "Phi2Model": _phi2,
    "Phi3MiniModel": _phi3,
    "PhiMoeModel": _phimoe,
    "PlamoModel": _plamo,
    "MiniCPM3Model": _minicpm3,
    "GemmaModel": _gemma,
    "Gemma2Model": _gemma2,
    "Gemma3Model": _gemma3,
    "Gemma3NModel": _gemma3n,
    "EmbeddingGemma": _embedding_gemma,
    # sliding windows
    "GptOssModel": _gpt_oss,
    "Cohere2Model": _gpt_oss,
    "Cohere2MoeModel": _cohere2moe,
    "Olmo2Model": _olmo2,
    "Exaone4Model": _exaone4,
    "ExaoneMoEModel": _exaone_moe,
    "GraniteSWAModel": _granite_swa,
    "AfmoeModel": _afmoe,
    "Llama4Model": _llama4,
    "CommandR2Model": _command_r,
    # MLA, MTP, leading dense blocks
    "DeepseekV2Model": _deepseek2,
    "DeepseekV32Model": _deepseek32,
    "GlmMoeDsaModel": _glm_dsa,
    "Glm4MoeLiteModel": _glm4moe_lite,
    "Glm4MoeModel": _glm4moe,
    "DeepseekModel": _bailing,
    "BailingMoeModel": _bailing,
    "BailingMoeV2Model": _bailing2,
    "Dots1Model": _bailing,
    "Ernie4_5MoeModel": _ernie_moe,
    "Mistral3Model": _mistral3,
    "PLMModel": _plm,
    "HrmTextModel": _hrm_text,
    # state (recurrent and hybrid)
    "Qwen3NextModel": _qwen3next,
    "JambaModel": _jamba,
    "MambaModel": _mamba,
    "Mamba2Model": _mamba2,
    "MapleModel": _maple,
    "JaisModel": _jais,
    "HunYuanMoEModel": _hunyuan_moe,
    "OpenELMModel": _openelm,
    "Gemma4Model": _gemma4,
    "MimoV2Model": _mimo2,
    "Step35Model": _step35,
    "NemotronHModel": _nemotron_h,
    "GraniteHybridModel": _granitehybrid,
    "FalconH1Model": _falcon_h1,
    "LFM2Model": _lfm2,
    "LFM2MoeModel": _lfm2_moe,
    "LFM2ColBertModel": _lfm2_colbert,
    "KimiLinearModel": _kimi,
    "Rwkv6Model": _rwkv6,
    "RWKV6Qwen2Model": _rwkv6qwen2,
    "Rwkv7Model": _rwkv7,
    "ARwkv7Model": _arwkv7,
    "Plamo2Model": _plamo2,
}


def converter_hparams(cfg: dict[str, Any], path: str) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """What llama.cpp's converter reads: (HF architecture, its HF_ARCHS entry, the hparams).

    ModelBase.load_hparams reads a config through transformers' AutoConfig where transformers knows its
    model_type, so a key the file leaves out has the config class's default (recorded in CONFIG_DEFAULTS);
    a few classes read the file itself (``raw_config``). The language model of a multimodal wrapper
    (text_config, llm_config, ...) is merged over the top level, as TextModel.__init__ does."""
    from kvplan.facts.hf_archs import HF_ARCHS  # data of ~80 KB: only on this path

    archs = cfg.get("architectures")
    if not isinstance(archs, list) or not archs or not isinstance(archs[0], str):
        raise BadInputError(f"{path}: 'architectures' is missing; cannot tell the model family")
    hf_arch = archs[0]
    info = HF_ARCHS.get(hf_arch)
    if info is None:
        raise UnknownArchitectureError(
            f"{path}: architectures[0] = {hf_arch[:80]!r} is not one llama.cpp's converter registers "
            f"({len(HF_ARCHS)} do: the README's architecture table lists them); describe the model with a YAML spec"
        )
    if "error" in info:
        raise UnknownArchitectureError(
            f"{path}: {hf_arch}: llama.cpp's converter cannot load its class ({info['error']})"
        )
    raw = bool(info.get("raw_config"))
    if not raw:
        cfg = _with_defaults(cfg)
        for part in _TEXT_PARTS:
            if isinstance(cfg.get(part), dict):
                cfg = {**cfg, "text_config": cfg[part]}
        thinker = cfg.get("thinker_config")
        if isinstance(thinker, dict) and isinstance(thinker.get("text_config"), dict):
            cfg = {**cfg, "text_config": thinker["text_config"]}
    elif isinstance(cfg.get("llm_config"), dict):  # Mamba2Model.__init__
        cfg = {**cfg, "text_config": cfg["llm_config"]}
    text = cfg.get("text_config")
    if isinstance(text, dict):  # TextModel.__init__: the text part moves to the top level
        cfg = {**cfg, **text}
    return hf_arch, info, cfg


def autoconfig(cfg: dict[str, Any]) -> dict[str, Any]:
    """``cfg`` as transformers' AutoConfig holds it: the keys the file leaves out at their class defaults."""
    return _with_defaults(cfg)


def _with_defaults(cfg: dict[str, Any], config_class: str | None = None) -> dict[str, Any]:
    """AutoConfig: the config class of ``model_type`` fills the keys the file leaves out, and its parts'
    classes (text_config, thinker_config) fill theirs; a part the file leaves out is the class's own."""
    from kvplan.facts.hf_archs import CONFIG_CLASSES, MODEL_TYPES

    if config_class is None:
        model_type = cfg.get("model_type")
        config_class = MODEL_TYPES.get(model_type) if isinstance(model_type, str) else None
    entry = CONFIG_CLASSES.get(config_class or "")
    if entry is None:
        return cfg
    out = {**entry["defaults"], **cfg}
    _derive(config_class or "", out)
    for key, sub_class in entry.get("sub", {}).items():
        part = cfg.get(key)
        if isinstance(part, dict):  # a part naming a model_type transformers knows is built by that class
            sub_type = part.get("model_type")
            named = MODEL_TYPES.get(sub_type) if isinstance(sub_type, str) else None
            given = entry.get("sub_given", {}).get(key, {})  # values the wrapper lays under a given part
            out[key] = _with_defaults({**given, **part}, named or sub_class)
        elif part is None:
            out[key] = _with_defaults(entry.get("sub_absent", {}).get(key, {}), sub_class)
    return out


#: config classes whose __init__ sets num_key_value_heads = num_attention_heads when a config leaves it out
_KV_HEADS_DERIVED = frozenset(
    """ApertusConfig ArceeConfig Cohere2Config CohereConfig DbrxConfig DeepseekV2Config GPTBigCodeConfig GraniteConfig
    GraniteMoeConfig GraniteMoeHybridConfig GraniteMoeSharedConfig HunYuanDenseV1Config HunYuanMoEV1Config LlamaConfig
    Olmo2Config Olmo3Config OlmoConfig OlmoeConfig Phi3Config PhiConfig""".split()
)
#: ... and head_dim = hidden_size // num_attention_heads
_HEAD_DIM_DERIVED = frozenset(
    "ArceeConfig Cohere2Config DeepseekV2Config LlamaConfig NemotronConfig Qwen3VLMoeTextConfig".split()
)


def _derive(config_class: str, cfg: dict[str, Any]) -> None:  # noqa: C901 - one branch per config class
    """What transformers' config classes (4.57.6) compute in __init__ from other keys, where the converter reads
    the result (scripts/record_hf_configs.py lists every derived key; these are the ones that reach a GGUF)."""
    layers, heads, hidden = cfg.get("num_hidden_layers"), cfg.get("num_attention_heads"), cfg.get("hidden_size")
    if config_class in _KV_HEADS_DERIVED and cfg.get("num_key_value_heads") is None and heads is not None:
        cfg["num_key_value_heads"] = heads
    if config_class == "FalconConfig" and cfg.get("num_kv_heads") is None and heads is not None:
        cfg["num_kv_heads"] = heads
    if cfg.get("head_dim") is None:
        if config_class in _HEAD_DIM_DERIVED and _is_int(hidden) and _is_int(heads) and heads:
            cfg["head_dim"] = hidden // heads
        elif config_class == "DeepseekV3Config" and cfg.get("qk_rope_head_dim") is not None:
            cfg["head_dim"] = cfg["qk_rope_head_dim"]
    if config_class == "Gemma3nTextConfig" and cfg.get("intermediate_size") is None:
        cfg["intermediate_size"] = 16384  # the class's default (one width, or a list of one per layer)
    if cfg.get("layer_types") is not None or not isinstance(layers, int) or not 0 < layers <= LLAMA_MAX_LAYERS:
        return
    n = layers
    types: list[str] | None = None
    if config_class == "Exaone4Config":
        pattern = cfg.get("sliding_window_pattern") if cfg.get("sliding_window") is not None else 0
        if _is_int(pattern) and pattern:
            types = ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(n)]
    elif config_class == "Gemma3nTextConfig":
        types = ["full_attention" if (i + 1) % 5 == 0 else "sliding_attention" for i in range(n)]
    elif config_class == "Lfm2Config":
        full = cfg.get("full_attn_idxs")
        full = full if isinstance(full, list) else list(range(n))
        types = ["full_attention" if i in full else "conv" for i in range(n)]
    elif config_class == "Olmo3Config":
        types = ["sliding_attention" if (i + 1) % 4 else "full_attention" for i in range(n)]
    elif config_class == "Qwen3NextConfig":
        interval = cfg.get("full_attention_interval", 4)
        if _is_int(interval) and interval:
            types = ["linear_attention" if (i + 1) % interval else "full_attention" for i in range(n)]
    elif config_class == "Llama4TextConfig":
        no_rope = cfg.get("no_rope_layers") or None
        interval = cfg.get("no_rope_layer_interval", 4)
        if no_rope is None and _is_int(interval) and interval:
            no_rope = [int((i + 1) % interval != 0) for i in range(n)]
        if isinstance(no_rope, list):
            types = ["chunked_attention" if r else "full_attention" for r in no_rope]
    if types is not None:
        cfg["layer_types"] = types


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def stated_context(cfg: dict[str, Any], path: str) -> int:
    """The context the config states, as TextModel reads it (the first of max_position_embeddings, n_ctx, ...,
    with transformers' defaults): what the serving engines take; 0 where it states none."""
    _, _, hparams = converter_hparams(cfg, path)
    return int(_Config(hparams, path).int(*_CTX_KEYS, required=False) or 0)


def mtp_layers(tensor_names: Iterable[str]) -> int:
    """The MTP layers a Qwen3-Next / Qwen3.5 checkpoint holds (mtp.layers.N.*): _QwenMtpMixin counts them from the
    tensor names where the config has no mtp_num_hidden_layers."""
    n = 0
    for name in tensor_names:
        name = name.removeprefix("model.")
        parts = name.split(".", 3)
        if len(parts) == 4 and parts[0] == "mtp" and parts[1] == "layers" and parts[2].isdecimal():
            n = max(n, int(parts[2]) + 1)
    return n


def config_to_metadata(cfg: dict[str, Any], path: str, tensor_names: Iterable[str] = ()) -> dict[str, Any]:
    """The GGUF key/values (``{arch}.`` prefixed) llama.cpp's converter would write for ``cfg`` (and, where a
    converter counts layers from them, the checkpoint's tensor names: its model.safetensors.index.json)."""
    _, info, hparams = converter_hparams(cfg, path)
    c = _Config(hparams, path, raw=cfg, mtp_layers=mtp_layers(tensor_names))
    kv = _common(c)
    for cls in (info["converter"], *info.get("bases", ())):
        rule = RULES.get(cls)
        if rule is not None:
            rule(c, kv)
            break
    arch = kv.pop("general.architecture", info["gguf_arch"])
    if kv.get("attention.head_count") is None:
        kv["attention.head_count"] = 0  # llama.cpp's default; a model with attention needs num_attention_heads
    out: dict[str, Any] = {"general.architecture": arch}
    name = hparams.get("_name_or_path")
    if isinstance(name, str) and name:
        out["general.name"] = name
    out.update({f"{arch}.{k}": v for k, v in kv.items()})
    return out
