"""The built-in catalog: the YAML specs in ``model_specs/`` (installed as ``kvplan/model_specs``)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from kvplan.model import ModelDescription
from kvplan.sources.spec import load_spec


def catalog_dir() -> Path:
    """Where the catalog lives: inside the installed package, else the source checkout."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "model_specs", here.parent / "model_specs"):
        if candidate.is_dir():
            return candidate
    return here / "model_specs"


def catalog_names() -> list[str]:
    d = catalog_dir()
    if not d.is_dir():
        return []
    return sorted(p.stem for p in d.glob("*.yaml"))


def catalog_path(name: str) -> Path | None:
    p = catalog_dir() / f"{name.lower()}.yaml"
    return p if p.is_file() else None


def load_catalog_model(name: str) -> ModelDescription:
    path = catalog_path(name)
    assert path is not None
    model = load_spec(os.fspath(path), source_kind="catalog", default_name=name.lower())
    # a stable source (not this machine's install path), so output can be diffed across machines
    return dataclasses.replace(model, source=f"catalog:{name.lower()}")
