"""The built-in catalog: the YAML specs in ``kvplan/model_specs/``, by name or by Hugging Face repository id."""

from __future__ import annotations

import dataclasses
import os
import re
from functools import cache
from pathlib import Path

from kvplan.errors import ModelNotFoundError
from kvplan.model import ModelDescription
from kvplan.sources.spec import load_spec

CATALOG_DIR = Path(__file__).resolve().parent.parent / "model_specs"
_HF_ID_RE = re.compile(r"^hf_id:\s*(\S+)\s*$", re.MULTILINE)


def catalog_names() -> list[str]:
    return sorted(p.stem for p in CATALOG_DIR.glob("*.yaml"))


@cache
def hf_ids() -> dict[str, str]:
    """Hugging Face repository id (lower case) → catalog name, read from each spec's ``hf_id:`` line."""
    out = {}
    for path in sorted(CATALOG_DIR.glob("*.yaml")):
        m = _HF_ID_RE.search(path.read_text(encoding="utf-8"))
        if m:
            out[m.group(1).strip("'\"").lower()] = path.stem
    return out


def catalog_name(ref: str) -> str | None:
    """The catalog name ``ref`` refers to: a catalog name, or the Hugging Face id a catalog entry carries."""
    lower = ref.strip().lower()
    if (CATALOG_DIR / f"{lower}.yaml").is_file():
        return lower
    return hf_ids().get(lower)


def load_catalog_model(name: str) -> ModelDescription:
    found = catalog_name(name)
    if found is None:
        raise ModelNotFoundError(f"{name}: not a catalog model (`kvplan models` lists them)")
    model = load_spec(os.fspath(CATALOG_DIR / f"{found}.yaml"), source_kind="catalog", default_name=found)
    # a stable source (not this machine's install path), so output can be diffed across machines
    return dataclasses.replace(model, source=f"catalog:{found}")
