"""Model sources: a GGUF file (local or remote), a YAML spec, a Hugging Face config.json or model folder, or a
catalog name or Hugging Face id → one ModelDescription."""

from __future__ import annotations

import difflib
import os
import re

from kvplan.errors import ModelNotFoundError
from kvplan.model import ModelDescription


def load_model(ref: str) -> ModelDescription:
    """Resolve MODEL: a .gguf path or URL, a .yaml/.yml spec, a config.json or model folder (local, a URL, or
    hf://ORG/REPO[@REVISION]), a catalog name, or the Hugging Face id of a catalog entry (offline)."""
    if not ref.strip():
        raise ModelNotFoundError("the model name is empty; give a .gguf, .yaml, config.json or catalog name")
    lower = ref.lower()
    if lower.startswith(("http://", "https://", "hf://")):
        return _load_remote(ref)
    if lower.endswith(".gguf") or _is_gguf(ref):  # or by its magic, whatever its name (Ollama's blobs have none)
        from kvplan.sources.gguf_source import load_gguf_model

        if not os.path.exists(ref):
            raise ModelNotFoundError(f"{ref}: no such file")
        return load_gguf_model(ref)
    if lower.endswith((".yaml", ".yml")):
        from kvplan.sources.spec import load_spec

        if not os.path.exists(ref):
            raise ModelNotFoundError(f"{ref}: no such file")
        return load_spec(ref)
    if lower.endswith(".json") or (os.path.isdir(ref) and os.path.isfile(os.path.join(ref, "config.json"))):
        from kvplan.sources.hf_config import load_hf_config

        if not os.path.exists(ref):
            raise ModelNotFoundError(f"{ref}: no such file")
        return load_hf_config(ref)
    from kvplan.sources.catalog import catalog_name, load_catalog_model

    if catalog_name(ref) is not None:
        return load_catalog_model(ref)
    if os.path.isdir(ref):
        raise ModelNotFoundError(f"{ref}: a folder without config.json (give the .gguf or config.json inside it)")
    if os.path.exists(ref):
        raise ModelNotFoundError(f"{ref}: not a GGUF (no GGUF magic), a .yaml/.yml spec or a config.json")
    raise _not_found(ref)


def _is_gguf(path: str) -> bool:
    """A regular file (never a FIFO or a device: they are not opened) that starts with GGUF's magic."""
    from kvplan.sources.files import open_regular

    try:
        with open_regular(path) as fh:
            return fh.read(4) == b"GGUF"
    except OSError:
        return False


def _load_remote(ref: str) -> ModelDescription:
    """A URL or hf:// reference: a GGUF's header, or a checkpoint's config.json (and safetensors index)."""
    from kvplan.sources.remote import is_remote_config, load_remote_config

    if is_remote_config(ref):
        return load_remote_config(ref)
    from kvplan.sources.gguf_source import load_gguf_model

    return load_gguf_model(ref)


def _not_found(ref: str) -> ModelNotFoundError:
    from kvplan.sources.catalog import catalog_names, hf_ids

    close = difflib.get_close_matches(ref.lower(), [*catalog_names(), *hf_ids()], n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else "; `kvplan models` lists the catalog"
    if _HF_ID.fullmatch(ref):  # a Hugging Face id the catalog does not hold: the hub has it (network: opt in)
        hint = f"{hint}; hf://{ref} reads its config.json from the Hugging Face hub"
    return ModelNotFoundError(f"{ref}: no such file and not a catalog model{hint}")


_HF_ID = re.compile(r"[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}")
