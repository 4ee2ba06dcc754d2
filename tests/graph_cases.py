"""The fixture models and settings of the oracle's compute-graph recordings (compute_graph.json and the CUDA
recordings made from its fixtures): a recorded case's model by its "gguf" name and its llama.cpp settings."""

from __future__ import annotations

import dataclasses
import json
from functools import cache
from pathlib import Path
from typing import Any

from helpers import FIXTURES

import kvplan
from kvplan.model import ModelDescription
from kvplan.runtimes.llamacpp import FlashAttn, LlamaCppSettings
from kvplan.sources.graph_facts import graph_facts

ORACLE = FIXTURES / "oracle"
#: Gemma 3 270M as the real file's own tensors (its metadata and tensor list are shipped)
REAL = "REAL:gemma-3-270m-q4_k_m.gguf"


@cache
def model_of(name: str) -> ModelDescription:
    if name.startswith("FILE:"):  # a full-size sparse file from its metadata and tensor list (gguf_files.sparse_file)
        import tempfile

        from gguf_files import sparse_file

        stem = name.removeprefix("FILE:")
        return kvplan.load_model(str(sparse_file(stem, Path(tempfile.mkdtemp()) / f"{stem}.gguf")))
    if name.startswith("GEN:"):  # made from a fixture's metadata and a real tensor list (tests/gguf_files.py)
        import tempfile

        from gguf_files import generated

        return kvplan.load_model(str(generated(name.removeprefix("GEN:"), Path(tempfile.mkdtemp()))))
    if name != REAL:
        return kvplan.load_model(str(ORACLE / name))
    meta = ORACLE / "file" / "gemma-3-270m-q4_k_m.meta.gguf"
    infos = json.loads((ORACLE / "file" / "gemma-3-270m-q4_k_m.tensors.json").read_text())["tensors"]
    from kvplan.sources.gguf_reader import read_gguf

    kv = read_gguf(meta, check_data_bounds=False).kv
    facts = graph_facts(kv, {n: tuple(shape) for n, _type, shape in infos})
    return dataclasses.replace(kvplan.load_model(str(meta)), graph=facts)


#: the harness's fa values (llama_flash_attn_type): -1 auto, 0 off, 1 on
FA = {-1: FlashAttn.AUTO, 0: FlashAttn.OFF, 1: FlashAttn.ON}


def settings_of(p: dict[str, Any]) -> LlamaCppSettings:
    """A recorded case's harness parameters as llama.cpp's settings."""
    return LlamaCppSettings(
        n_ctx=p["n_ctx"],
        n_seq=p["n_seq_max"],
        kv_unified=bool(p["kv_unified"]),
        n_batch=p["n_batch"],
        n_ubatch=p["n_ubatch"],
        type_k=p["type_k"],
        type_v=p["type_v"],
        flash_attn=FA[p["fa"]],
        swa_full=bool(p["swa_full"]),
        n_rs_seq=p.get("n_rs_seq", 0),
        mtp=bool(p.get("mtp", 0)),
    )
