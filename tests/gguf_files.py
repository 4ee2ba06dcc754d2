"""GGUF files written for tests with the gguf package's own writer."""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np


def split_shard(path: Path, no: int, count: int, tensor: str, rows: int) -> None:
    w = gguf.GGUFWriter(str(path), "llama")
    if no == 0:
        w.add_block_count(2)
        w.add_context_length(4096)
        w.add_embedding_length(64)
        w.add_head_count(4)
    w.add_uint16("split.no", no)
    w.add_uint16("split.count", count)
    w.add_int32("split.tensors.count", 2)
    w.add_tensor(tensor, np.zeros((rows, 64), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def big_vocab_model(path: Path, vocab: int = 150_000, tensor_mib: int = 24) -> Path:
    """A Llama-shaped GGUF with a large vocabulary and ``tensor_mib`` MiB of tensor data."""
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_context_length(8192)
    w.add_embedding_length(4096)
    w.add_block_count(32)
    w.add_head_count(32)
    w.add_head_count_kv(8)
    w.add_tokenizer_model("gpt2")
    w.add_token_list([f"token-{i}" for i in range(vocab)])
    w.add_tensor("token_embd.weight", np.zeros((tensor_mib * 256, 1024), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
