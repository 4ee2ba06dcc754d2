"""llama.cpp's settings from its flags, and the cache-type ladder: what a plan without hardware needs (the
estimate path), apart from the placement on devices (capacity/llamacpp.py)."""

from __future__ import annotations

from kvplan.capacity.request import LlamaCppOptions
from kvplan.runtimes.llamacpp import Backend, LlamaCppSettings

#: cache type pairs from least to most loss, for --cache-types auto
CACHE_TYPE_LADDER = (
    ("f16", "f16"),
    ("q8_0", "q8_0"),
    ("q8_0", "q5_1"),
    ("q8_0", "q4_0"),
    ("q5_1", "q5_1"),
    ("q5_0", "q5_0"),
    ("q4_1", "q4_1"),
    ("q4_0", "q4_0"),
)


def settings_for(o: LlamaCppOptions, backend: Backend) -> LlamaCppSettings:
    """llama.cpp's context parameters from its flags as given (common_context_params_to_llama): what was not
    given takes llama.cpp's default (LlamaCppSettings). The context is ``-c``, or ``--ctx-per-seq`` × ``-np``, or 0
    (the trained context)."""
    d = LlamaCppSettings()
    n_seq = o.parallel or 1
    return LlamaCppSettings(
        n_ctx=o.ctx_size if o.ctx_size is not None else (o.ctx_per_seq or 0) * n_seq,
        n_seq=n_seq,
        kv_unified=o.kv_unified,
        n_batch=d.n_batch if o.batch_size is None else o.batch_size,
        n_ubatch=d.n_ubatch if o.ubatch_size is None else o.ubatch_size,
        type_k=o.cache_type_k or d.type_k,
        type_v=o.cache_type_v or d.type_v,
        flash_attn=o.flash_attn or d.flash_attn,
        swa_full=o.swa_full,
        n_rs_seq=o.rs_seq,
        backend=o.backend or backend,
    )
