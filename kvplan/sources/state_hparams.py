"""The hparams behind recurrent state, indexer and compressed caches (llama.cpp's load_arch_hparams).

Separate from the attention rules in metadata.py: which layers are recurrent, the r/s state widths
(llama_hparams::n_embd_r / n_embd_s), the PLE conv history, indexer layers and widths, and DeepSeek-V4's
compress ratios. All widths are elements (states are always f32).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from kvplan.facts import archs
from kvplan.model import RecurrentParams

if TYPE_CHECKING:
    from kvplan.sources.metadata import _Keys

# archs whose load_arch_hparams reads ssm.conv_kernel / inner_size / state_size (+ group_count)
SSM_ARCHS = frozenset(
    """mamba mamba2 jamba falcon-h1 plamo2 granitehybrid nemotron_h nemotron_h_moe qwen3next qwen35 qwen35moe
    qwen4exp""".split()
)
NO_GROUP_ARCHS = frozenset({"mamba", "jamba"})  # Mamba-1 style: group_count not read
KDA_ARCHS = frozenset("kimi-linear kimi-k3 bailingmoe3 glm5-next".split())
RWKV_ARCHS = frozenset("rwkv6 rwkv6qwen2 rwkv7 arwkv7".split())
SHORTCONV_ARCHS = frozenset({"lfm2", "lfm2moe"})
#: recurrent iff n_head_kv(il) == 0, for il < n_layer() (glm5-next: every layer)
ZERO_KV_RECURRENT_ARCHS = frozenset(
    "jamba granitehybrid plamo2 lfm2 lfm2moe kimi-linear kimi-k3 bailingmoe3 glm5-next".split()
)
#: recurrent from attention.recurrent_layers, else (il + 1) % full_attention_interval != 0
INTERVAL_RECURRENT_ARCHS = {"qwen3next": 4, "qwen35": 4, "qwen35moe": 4, "qwen4exp": 4, "minimax-01": 8}
#: archs that read attention.indexer.key_length
INDEXER_ARCHS = frozenset("deepseek32 glm-dsa hy_v4 dots3note minimax-m3 glm5-next qwen4exp deepseek4".split())

# GLM-5.2's built-in indexer pattern (src/models/glm-dsa.cpp GLM_5_2_DEFAULT_INDEXER_TYPES)
_GLM_5_2_INDEXER = [1, 1] + [1, 0, 0, 0] * 19


@dataclass(frozen=True)
class StateHParams:
    recurrent: tuple[bool, ...]
    n_ff: tuple[int, ...]
    n_embd_r: int
    n_embd_s: int
    ple_conv_state: int
    ple_layers: frozenset[int]
    indexer_head_size: int
    indexer_kpool: int
    indexer_full: tuple[bool, ...]
    n_layer_dense_lead: int
    compress_ratios: tuple[int, ...]
    params: RecurrentParams | None


def load_state_hparams(  # noqa: C901 - load_arch_hparams of every recurrent family, in llama.cpp's order
    keys: _Keys,
    arch: str,
    n_embd: int,
    n_layer: int,
    n_layer_all: int,
    n_head: list[int],
    n_head_kv: list[int],
    head_k_full: int,
) -> StateHParams:
    """``keys`` is metadata._Keys; raises HParamsError (through it) where llama.cpp fails to load."""
    from kvplan.errors import HParamsError

    n_ff = keys.key_or_arr("feed_forward_length", n_layer_all, [0] * n_layer_all)
    head0 = n_head[0] if n_head else 0

    recurrent = [False] * n_layer_all
    if arch in archs.RECURRENT_ARCHS or arch == "falcon-h1":
        recurrent = [True] * n_layer_all
    elif arch in ZERO_KV_RECURRENT_ARCHS:
        upto = n_layer_all if arch == "glm5-next" else n_layer
        recurrent = [il < upto and n_head_kv[il] == 0 for il in range(n_layer_all)]
    elif arch in ("nemotron_h", "nemotron_h_moe"):
        recurrent = [il < n_layer and n_head_kv[il] == 0 and n_ff[il] == 0 for il in range(n_layer_all)]
    elif arch in INTERVAL_RECURRENT_ARCHS:
        arr = keys.key_or_arr("attention.recurrent_layers", n_layer_all, [], allow_bool=True)
        if arr:
            recurrent = [bool(v) for v in arr]
        else:
            interval = keys.uint("full_attention_interval", INTERVAL_RECURRENT_ARCHS[arch])
            if interval == 0:
                raise keys._fail("full_attention_interval", "must be greater than zero")
            recurrent = [il < n_layer and (il + 1) % interval != 0 for il in range(n_layer_all)]

    d_conv = d_inner = d_state = n_group = n_rank = 0
    if arch in SSM_ARCHS:
        d_conv = keys.uint("ssm.conv_kernel", required=True)
        d_inner = keys.uint("ssm.inner_size", required=True)
        d_state = keys.uint("ssm.state_size", required=True)
        n_rank = keys.uint("ssm.time_step_rank", required=True)
        if arch not in NO_GROUP_ARCHS:
            n_group = keys.uint("ssm.group_count", required=True)
    kda = 0
    if arch in KDA_ARCHS:
        d_conv = keys.uint("ssm.conv_kernel", required=True)
        kda = keys.uint("kda.head_dim", required=True)
    wkv = 0
    token_shift = 2
    if arch in RWKV_ARCHS:
        wkv = keys.uint("wkv.head_size", required=True)
        token_shift = keys.uint("token_shift_count", 2)
    l_cache = keys.uint("shortconv.l_cache", required=True) if arch in SHORTCONV_ARCHS else 0
    head_la = head_k_full if arch == "minimax-01" else 0

    # llama_hparams::n_embd_r / n_embd_s: the first rule that applies wins
    if wkv:
        n_embd_r = token_shift * n_embd
    elif l_cache:
        n_embd_r = n_embd * (l_cache - 1)
    elif kda:
        n_embd_r = 3 * (d_conv - 1 if d_conv > 0 else 3) * head0 * kda
    else:
        n_embd_r = (d_conv - 1 if d_conv > 0 else 0) * (d_inner + 2 * n_group * d_state)
    if wkv:
        n_embd_s = n_embd * wkv
    elif kda:
        n_embd_s = kda * kda * head0
    elif head_la:
        n_embd_s = head_la * head_la * head0
    else:
        n_embd_s = d_state * d_inner

    ple_conv_state = 0
    ple_layers: frozenset[int] = frozenset()
    if arch == "qwen4exp" and keys.has("ple.layers"):
        layers = keys.array("ple.layers") or []
        if len(layers) > 1:
            raise keys._fail("ple.layers", f"lists {len(layers)} layers, but only one PLE layer is supported")
        if layers:
            il = int(layers[0])
            if not 0 <= il < n_layer_all:
                raise keys._fail("ple.layers", f"PLE layer {il} is out of range")
            ngram = keys.uint("ple.ngram_size", required=True)
            heads = (ngram - 1) * keys.uint("ple.heads_per_ngram", required=True)
            kernel = keys.uint("ple.conv_kernel", required=True)
            hc = keys.uint("hyper_connection.count", 0)
            if heads and kernel:
                ple_conv_state = (kernel - 1) * ngram * hc * n_embd
            ple_layers = frozenset({il})
            if not recurrent[il]:
                raise HParamsError(f"{keys.source}: PLE layer {il} is not a linear attention layer")

    indexer_head_size = keys.uint("attention.indexer.key_length", 0) if arch in INDEXER_ARCHS else 0
    kpool = keys.uint("attention.indexer.kpool", 0) if arch == "glm5-next" else 0
    if arch == "glm5-next" and kpool <= 1:
        raise keys._fail("attention.indexer.kpool", f"must be greater than 1 (got {kpool})")
    indexer_full = [False] * n_layer_all
    if arch in ("glm-dsa", "glm5-next", "hy_v4"):
        if arch == "glm5-next" or (arch == "glm-dsa" and keys.uint("context_length", 0) < 1048576):
            default = [1] * n_layer_all
        elif arch == "glm-dsa":
            default = (_GLM_5_2_INDEXER + [0] * n_layer_all)[:n_layer_all]
        else:
            default = [0] * n_layer_all
        types = keys.key_or_arr("attention.indexer.types", n_layer, default[:n_layer], allow_bool=True)
        indexer_full = [bool(v) for v in types] + [bool(v) for v in default[n_layer:]]
    elif arch == "dots3note":
        items = keys.array("attention.indexer.types")
        if items is None:
            raise keys._fail("attention.indexer.types", "per-layer array not found (llama.cpp requires it)")
        indexer_full = [bool(v) for v in items[:n_layer_all]] + [False] * max(0, n_layer_all - len(items))
    elif arch == "deepseek32":
        indexer_full = [True] * n_layer_all
    if arch == "hy_v4" and keys.uint("attention.indexer.top_k", 0) > 0 and not indexer_full[0]:
        raise HParamsError(f"{keys.source}: hy_v4: layer 0 must own an indexer, nothing precedes it to share")

    dense_lead = keys.uint("leading_dense_block_count", 0)
    ratios: list[int] = []
    if arch == "deepseek4":
        items = keys.array("attention.compress_ratios")
        if items is None or len(items) < n_layer_all:
            raise keys._fail("attention.compress_ratios", "DeepSeek-V4 compress_ratios is shorter than block_count")
        ratios = [int(v) for v in items[:n_layer_all]]
    elif arch == "qwen4exp" and keys.has("attention.compress_ratios"):  # QSA's block per layer (optional)
        items = keys.array("attention.compress_ratios") or []
        ratios = ([int(v) for v in items] + [0] * n_layer_all)[:n_layer_all]
    params = None
    if d_conv or kda or wkv or l_cache:
        params = RecurrentParams(d_conv, d_inner, d_state, n_group, n_rank, kda, l_cache, wkv)
    return StateHParams(
        params=params,
        recurrent=tuple(recurrent),
        n_ff=tuple(n_ff),
        n_embd_r=n_embd_r,
        n_embd_s=n_embd_s,
        ple_conv_state=ple_conv_state,
        ple_layers=ple_layers,
        indexer_head_size=indexer_head_size,
        indexer_kpool=kpool,
        indexer_full=tuple(indexer_full),
        n_layer_dense_lead=dense_lead,
        compress_ratios=tuple(ratios),
    )


def with_config_state(params: RecurrentParams | None, cfg: Mapping[str, object]) -> RecurrentParams | None:
    """``params`` with what a config.json states about the state beyond the GGUF keys: the checkpoint's own
    mamba_ssm_cache_dtype (Nemotron-H) and the SSM kernel's chunk (mamba_chunk_size: Falcon-H1 / Granite 4.0-H;
    chunk_size: Mamba-2 and Nemotron-H), which SGLang checkpoints a Mamba state on. Used for a config.json and for
    a catalog spec's checkpoint.config alike."""
    if params is None:
        return None
    ssm_dtype = cfg.get("mamba_ssm_cache_dtype")
    if isinstance(ssm_dtype, str):
        params = replace(params, cache_dtype=ssm_dtype)
    chunk = cfg.get("mamba_chunk_size", cfg.get("chunk_size"))
    if isinstance(chunk, int) and not isinstance(chunk, bool) and 0 < chunk <= 1 << 16:
        params = replace(params, chunk=chunk)
    return params
