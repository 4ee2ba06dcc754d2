"""Model sources: a GGUF file (local or remote), a YAML spec, a Hugging Face config.json or model folder, or a
catalog name or Hugging Face id → one ModelDescription."""

from __future__ import annotations

import difflib
import os

from kvplan.errors import ModelNotFoundError
from kvplan.model import ModelDescription


def load_model(ref: str) -> ModelDescription:
    """Resolve MODEL: a .gguf path or URL, a .yaml/.yml spec, a config.json or model folder, a catalog name, or
    the Hugging Face id of a catalog entry."""
    if not ref.strip():
        raise ModelNotFoundError("the model name is empty; give a .gguf, .yaml, config.json or catalog name")
    lower = ref.lower()
    if lower.startswith(("http://", "https://", "hf://")):
        from kvplan.sources.gguf_source import load_gguf_model

        return load_gguf_model(ref)
    if lower.endswith(".gguf"):
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
    from kvplan.sources.catalog import catalog_name, catalog_names, hf_ids, load_catalog_model

    if catalog_name(ref) is not None:
        return load_catalog_model(ref)
    if os.path.isdir(ref):
        raise ModelNotFoundError(f"{ref}: a folder without config.json (give the .gguf or config.json inside it)")
    if os.path.exists(ref):
        raise ModelNotFoundError(f"{ref}: not a .gguf file, a .yaml/.yml spec or a config.json")
    close = difflib.get_close_matches(lower, [*catalog_names(), *hf_ids()], n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else "; `kvplan models` lists the catalog"
    raise ModelNotFoundError(f"{ref}: no such file and not a catalog model{hint}")
