"""The serving engines' recurrent-state shapes: one shape set per mixer kind, split over tensor parallel.

A port of vLLM 0.33's ``MambaStateShapeCalculator`` (vllm/model_executor/layers/mamba/mamba_utils.py) and each
model class's ``get_mamba_state_shape_from_config`` (mamba.py, mamba2.py, jamba.py, nemotron_h.py,
granitemoehybrid.py, falcon_h1.py, qwen3_next.py, lfm2.py, kimi_linear.py); SGLang 0.5.23 builds states of
the same sizes (``Mamba2StateShape.create`` / ``create_full_rank``, ``KimiLinearStateShape.create`` in
sglang/srt/configs/mamba_utils.py). Fed from the model description's state hparams (the GGUF ``ssm.*`` keys
carry every number these need). Conv states are laid out (d_conv - 1, dim), vLLM's default "SD" layout;
shapes are elements. Each engine picks the dtypes (its own module says how).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from kvplan.errors import RefusedConfigError
from kvplan.model import ModelDescription, RecurrentParams

#: the mixer kind of each architecture's state layers, as vLLM's model class builds them
MIXERS: dict[str, str] = {
    "mamba": "mamba1",
    "jamba": "mamba1",
    "mamba2": "mamba2",
    "nemotron_h": "mamba2",
    "nemotron_h_moe": "mamba2",
    "granitehybrid": "mamba2",
    "falcon-h1": "mamba2",
    "qwen3next": "gdn",
    "qwen35": "gdn",
    "qwen35moe": "gdn",
    "lfm2": "short_conv",
    "lfm2moe": "short_conv",
    "kimi-linear": "kda",
}
MIXER_LABELS = {
    "mamba1": "Mamba-1",
    "mamba2": "Mamba-2",
    "gdn": "gated delta-net",
    "short_conv": "short conv",
    "kda": "Kimi delta attention",
}
#: vLLM's backend for each state kind (MambaAttentionBackendEnum)
STATE_BACKENDS = {
    "mamba1": "MAMBA1_ATTN",
    "mamba2": "MAMBA2_ATTN",
    "gdn": "GDN_ATTN",
    "short_conv": "SHORT_CONV_ATTN",
    "kda": "GDN_ATTN",
}
DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}
#: --mamba-ssm-cache-dtype values
#: FLASHINFER_GDN_CHECKPOINT_ALIGNMENT (vllm/v1/attention/backends/gdn_attn.py)
GDN_CHECKPOINT_ALIGNMENT = 64


@dataclass(frozen=True)
class State:
    """One state layer's page content on one rank."""

    mixer: str
    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[str, ...]

    @property
    def bytes(self) -> int:
        return sum(prod(s) * DTYPE_BYTES[d] for s, d in zip(self.shapes, self.dtypes, strict=True))

    @property
    def label(self) -> str:
        return MIXER_LABELS[self.mixer]


def _divide(n: int, tp: int, what: str) -> int:
    if n % tp:
        raise RefusedConfigError(f"vllm: {what} ({n}) is not divisible by tensor parallel size {tp}")
    return n // tp


def _extra_groups(groups: int, tp: int) -> int:
    """MambaStateShapeCalculator.extra_groups_for_head_shards: groups replicate so every head shard has its own."""
    return 0 if groups % tp == 0 else tp - groups


def mixer_of(model: ModelDescription, engine: str) -> str:
    mixer = MIXERS.get(model.arch)
    if mixer is None or model.recurrent_params is None:
        raise RefusedConfigError(f"{engine}: kvplan does not know how {engine} shapes {model.arch}'s recurrent state")
    return mixer


def vllm_ssm_dtype(model: ModelDescription, requested: str | None, model_dtype: str = "bfloat16") -> str:
    """vLLM's temporal (SSM) state dtype: --mamba-ssm-cache-dtype, where auto means the model's dtype — except
    Nemotron-H, whose config hook takes the checkpoint's own (float32 when it names none), and KDA (float32)."""
    if requested not in (None, "auto"):
        return requested
    if model.arch in ("nemotron_h", "nemotron_h_moe"):  # NemotronHForCausalLMConfig.update_mamba_ssm_cache_dtype
        declared = model.recurrent_params.cache_dtype if model.recurrent_params else ""
        return declared if declared in DTYPE_BYTES else "float32"
    if model.arch == "kimi-linear":  # MambaStateDtypeCalculator.kda_state_dtype
        return "float32"
    return model_dtype


def state(model: ModelDescription, tp: int, conv: str, ssm: str, engine: str) -> State:
    """The state one layer keeps on one of ``tp`` ranks, its conv state in ``conv``, its SSM state in ``ssm``."""
    mixer = mixer_of(model, engine)
    p: RecurrentParams = model.recurrent_params  # type: ignore[assignment]  # mixer_of checked it
    if mixer == "mamba1":
        inner = _divide(p.d_inner, tp, "the Mamba inner size")
        return State(mixer, ((p.d_conv - 1, inner), (inner, p.d_state)), (conv, ssm))
    if mixer == "mamba2":
        groups = p.n_group + _extra_groups(p.n_group, tp)
        conv_dim = _divide(p.d_inner + 2 * groups * p.d_state, tp, "the Mamba-2 conv width")
        heads = _divide(p.n_head, tp, "the Mamba-2 heads")
        return State(mixer, ((p.d_conv - 1, conv_dim), (heads, p.d_inner // p.n_head, p.d_state)), (conv, ssm))
    if mixer == "gdn":  # qwen3_next: key heads = ssm.group_count, value heads = ssm.time_step_rank
        conv_dim = _divide(2 * p.n_group * p.d_state + p.d_inner, tp, "the gated delta-net conv width")
        heads = _divide(p.n_head, tp, "the gated delta-net value heads")
        return State(mixer, ((p.d_conv - 1, conv_dim), (heads, p.d_inner // p.n_head, p.d_state)), (conv, ssm))
    if mixer == "kda":
        heads = next(la.n_head for la in model.layers if la.recurrent)
        conv_dim = _divide(3 * heads * p.kda_head, tp, "the KDA conv width")
        return State(mixer, ((p.d_conv - 1, conv_dim), (_divide(heads, tp, "the KDA heads"), p.kda_head, p.kda_head)),
                     (conv, ssm))  # fmt: skip
    # short conv (LFM2): the conv state only
    return State(mixer, ((p.l_cache - 1, _divide(model.n_embd, tp, "the hidden size")),), (conv,))


# --- vLLM's prefix-caching checkpoints -----------------------------------------------------------------


def checkpoint_alignment(mixer: str, capability: tuple[int, int] | None, head_k: int) -> int | None:
    """MambaBase.get_prefill_checkpoint_alignment with prefix caching on ("align"): Qwen's gated delta-net
    exports prefill checkpoints when vLLM picks the FlashInfer GDN prefill kernel — sm90, or sm100 / sm120 with
    128-wide key heads (qwen_gdn_linear_attn.py _resolve_gdn_prefill_backend); every other mixer none."""
    if mixer != "gdn" or capability is None:
        return None
    major = capability[0]
    if major == 9 or (major in (10, 12) and head_k == 128):
        return GDN_CHECKPOINT_ALIGNMENT
    return None


def checkpoint_blocks(mixer: str, capability: tuple[int, int] | None, head_k: int) -> int:
    """MambaSpec.num_prefill_checkpoint_blocks: the extra page a request holds in align mode while a prefill
    checkpoint is exported — every Mamba-2 mixer (MambaMixer2.get_kv_cache_spec), Qwen's gated delta-net when
    it exports checkpoints; none for Mamba-1, short conv, and KDA with the Triton prefill kernel (Kimi-Linear's
    config has no gate bound, which FlashKDA needs)."""
    if mixer == "mamba2":
        return 1
    return 1 if checkpoint_alignment(mixer, capability, head_k) else 0
