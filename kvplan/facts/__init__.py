"""llama.cpp's per-architecture facts, GGML type sizes and GGUF keys: data tables, no logic (each pinned by a
test against its source where the source is importable)."""
