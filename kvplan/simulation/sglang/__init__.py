"""SGLang 0.5.23's scheduler, ported: the scheduler and its pools (scheduler), the radix cache (radix), the
event loop over time (engine), the flags simulate reads (flags)."""
