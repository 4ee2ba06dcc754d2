"""kvplan: byte-exact KV cache and state memory planning for LLM inference."""

__version__ = "0.1.0"
