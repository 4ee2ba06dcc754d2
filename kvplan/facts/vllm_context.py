"""What vLLM reads of a config.json's context (vLLM 0.33.0: ModelArchConfigConvertorBase.derive_max_model_len_and_key
and _get_and_verify_max_len): the keys, in vLLM's order, and how a text config's context facts are read. The
rules over them are kvplan.runtimes.engines.vllm.context."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvplan.model import ContextKeys

#: derive_max_model_len_and_key's keys, in its order
LENGTH_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "model_max_length",
    "max_target_positions",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)
#: rope types whose factor is already in max_position_embeddings
UNSCALED_ROPE = frozenset({"su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling"})
#: vLLM's default where a config states no length (it logs a warning)
DEFAULT_MAX_LEN = 2048


def _length(v: object) -> int | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or not 0 < v < 1 << 40:
        return None
    return int(v)


def context_keys(text: Mapping[str, Any]) -> ContextKeys:
    """The context facts of a text config (the config.json read as transformers' AutoConfig reads it; for a
    multimodal checkpoint its text_config)."""
    keys = tuple((k, n) for k in LENGTH_KEYS if (n := _length(text.get(k))) is not None)
    raw = text.get("rope_parameters") or text.get("rope_scaling")
    sets: list[Mapping[str, Any]] = []
    if isinstance(raw, Mapping):
        nested = [v for v in raw.values() if isinstance(v, Mapping)]
        sets = nested if nested and len(nested) == len(raw) else [raw]
    rope = []
    for rp in sets[:64]:
        kind = rp.get("rope_type", rp.get("type", "default"))
        factor = rp.get("factor")
        rope.append(
            (
                str(kind)[:40],
                float(factor) if isinstance(factor, (int, float)) and not isinstance(factor, bool) else None,
            )
        )
    mt = text.get("model_type")
    return ContextKeys(
        keys,
        _length(text.get("model_max_length")),
        tuple(rope),
        _length(text.get("original_max_position_embeddings")),
        mt[:80] if isinstance(mt, str) else "",
    )
