"""vLLM's max_model_len: the context it derives from a config.json, and the lengths it refuses.

A port of vLLM 0.33.0's ``ModelArchConfigConvertorBase.derive_max_model_len_and_key``
(vllm/transformers_utils/model_arch_config_convertor.py) and ``_get_and_verify_max_len`` (vllm/config/model.py):
the smallest of the length keys, Command-R's ``model_max_length`` overriding them, 2048 where the config states
none (any asked length then goes), RoPE ``factor`` applied except for YaRN / Llama 3 / LongRoPE variants and Gemma 3,
LongRoPE defaulting to ``original_max_position_embeddings``, and an asked length above the derived one refused
unless ``model_max_length`` allows it. Proven against vLLM's own ModelConfig on 139 recorded cases
(tests/runtimes/engines/test_vllm_context.py). Not ported: ``--disable-sliding-window`` (kvplan has no such flag),
pooling models' tokenizer_config limit, encoder configs, speculative drafts.
"""

from __future__ import annotations

import os

from kvplan.errors import RefusedConfigError
from kvplan.facts.vllm_context import DEFAULT_MAX_LEN, UNSCALED_ROPE
from kvplan.model import ContextKeys

__all__ = ["DEFAULT_MAX_LEN", "default_max_model_len", "derived", "verify_max_model_len"]


def derived(c: ContextKeys) -> tuple[float, str | None]:
    """derive_max_model_len_and_key, then the RoPE scaling of _get_and_verify_max_len: (length, the key it came
    from); inf where the config states none."""
    length, key = float("inf"), None
    for k, n in c.keys:
        if n < length:
            length, key = float(n), k
    if c.model_max_length:
        length, key = float(c.model_max_length), "model_max_length"
    return length, key


def _scaled(c: ContextKeys, length: float) -> float:
    if c.rope and "gemma3" not in c.model_type:
        factor = 1.0
        for kind, f in c.rope:  # rp.get("factor", scaling_factor); a null factor is taken as absent
            if kind not in UNSCALED_ROPE and f is not None:
                factor = f
        length *= factor
    return length


def default_max_model_len(c: ContextKeys) -> int:
    """The max_model_len vLLM takes when none is given (or -1)."""
    length, _ = derived(c)
    if length == float("inf"):
        length = DEFAULT_MAX_LEN
    length = _scaled(c, length)
    if any(kind == "longrope" for kind, _ in c.rope):
        return int(c.original_max_position_embeddings or length)
    return int(length)


def verify_max_model_len(c: ContextKeys, asked: int) -> int:
    """``asked`` as vLLM takes it, or vLLM's refusal (RefusedConfigError with vLLM's message; vLLM's
    VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 lets it through, as there)."""
    length, key = derived(c)
    if length == float("inf"):
        return asked  # no length in the config: vLLM uses the one given
    length = _scaled(c, length)
    if asked > length and (c.model_max_length is None or asked > c.model_max_length):
        if os.environ.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "").strip().lower() in ("1", "true"):
            return asked
        shown = f"{length:.1f}" if float(length).is_integer() else str(length)
        raise RefusedConfigError(
            f"vllm: User-specified max_model_len ({asked}) is greater than the derived max_model_len ({key}="
            f"{shown} or model_max_length={c.model_max_length} in model's config.json). To allow overriding this "
            "maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"
        )
    return asked
