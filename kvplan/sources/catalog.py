"""The built-in catalog: the YAML specs in ``model_specs/``, by name or by Hugging Face repository id.

The specs are compiled into ``catalog.json`` (``scripts/make_catalog.py``, or ``python -m kvplan.sources.catalog``):
their checked GGUF metadata, so reading a catalog model parses no YAML (tests/sources/test_catalog.py checks
the compiled catalog equals the YAML). A spec the compiled file does not hold is read from its YAML."""

from __future__ import annotations

import dataclasses
import json
import os
from functools import cache
from pathlib import Path
from typing import Any

from kvplan.errors import ModelNotFoundError
from kvplan.model import ModelDescription, SpecInfo
from kvplan.sources.values import ArrayValue

_PACKAGE = Path(__file__).resolve().parent.parent
#: the catalog's specs: the top-level model_specs/ of a checkout, shipped inside the package by the wheel
#: (pyproject.toml: force-include), so that an installed kvplan finds them from any directory
CATALOG_DIR = next(
    (d for d in (_PACKAGE / "model_specs", _PACKAGE.parent / "model_specs") if d.is_dir()), _PACKAGE / "model_specs"
)
COMPILED = CATALOG_DIR / "catalog.json"


@cache
def _compiled() -> dict[str, dict[str, Any]]:
    try:
        data: dict[str, dict[str, Any]] = json.loads(COMPILED.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data


def catalog_names() -> list[str]:
    return sorted({p.stem for p in CATALOG_DIR.glob("*.yaml")} | set(_compiled()))


@cache
def hf_ids() -> dict[str, str]:
    """Hugging Face repository id (lower case) → catalog name."""
    out = {}
    compiled = _compiled()
    for name in catalog_names():
        entry = compiled.get(name)
        hf_id = entry["spec"]["hf_id"] if entry is not None else _spec_of(name).info.hf_id
        if hf_id:
            out[hf_id.lower()] = name
    return out


def catalog_name(ref: str) -> str | None:
    """The catalog name ``ref`` refers to: a catalog name, or the Hugging Face id a catalog entry carries."""
    lower = ref.strip().lower()
    if lower in _compiled() or (CATALOG_DIR / f"{lower}.yaml").is_file():
        return lower
    return hf_ids().get(lower)


def _spec_of(name: str) -> Any:
    from kvplan.sources.files import read_text
    from kvplan.sources.spec import spec_parts

    path = os.fspath(CATALOG_DIR / f"{name}.yaml")
    return spec_parts(read_text(path, "a YAML model spec"), path, default_name=name)


def _encode(value: Any) -> Any:
    if isinstance(value, ArrayValue):
        return {"array": value.element_type, "values": list(value.values or ())}
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        return ArrayValue(value["array"], len(value["values"]), tuple(value["values"]))
    return value


def compile_catalog() -> str:
    """catalog.json's text: every spec's checked parts."""
    out = {}
    for name in sorted(p.stem for p in CATALOG_DIR.glob("*.yaml")):
        parts = _spec_of(name)
        out[name] = {
            "kv": {k: _encode(v) for k, v in parts.kv.items()},
            "name": parts.name,
            "params": parts.params,
            "active_params": parts.active_params,
            "params_source": parts.params_source,
            "checkpoint": parts.checkpoint,
            "spec": dataclasses.asdict(parts.info),
        }
    return json.dumps(out, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def load_catalog_model(name: str) -> ModelDescription:
    found = catalog_name(name)
    if found is None:
        raise ModelNotFoundError(f"{name}: not a catalog model (`kvplan models` lists them)")
    entry = _compiled().get(found)
    if entry is None:
        from kvplan.sources.spec import load_spec

        model = load_spec(os.fspath(CATALOG_DIR / f"{found}.yaml"), source_kind="catalog", default_name=found)
    else:
        from kvplan.sources.metadata import describe

        kv = {k: _decode(v) for k, v in entry["kv"].items()}
        spec = entry["spec"]
        info = SpecInfo(**{**spec, "sources": tuple(spec["sources"])})
        model = describe(kv, source="catalog", source_kind="catalog", name=entry["name"], n_params=entry["params"])
        model = dataclasses.replace(model, spec=info, n_active_params=entry.get("active_params"))
        from kvplan.sources.weight_format import with_checkpoint

        model = with_checkpoint(model, entry.get("checkpoint"), entry.get("params_source"), f"catalog:{found}")
    # a stable source (not this machine's install path), so output can be diffed across machines
    return dataclasses.replace(model, source=f"catalog:{found}")


if __name__ == "__main__":  # regenerate catalog.json
    COMPILED.write_text(compile_catalog(), encoding="utf-8")
