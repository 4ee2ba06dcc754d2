"""The compiled catalog (catalog.json, read without YAML) is the YAML specs, checked."""

from __future__ import annotations

import dataclasses
import os

from kvplan.sources.catalog import CATALOG_DIR, COMPILED, catalog_names, compile_catalog, load_catalog_model
from kvplan.sources.spec import load_spec


def test_the_compiled_catalog_is_up_to_date() -> None:
    assert COMPILED.read_text(encoding="utf-8") == compile_catalog(), "run python -m kvplan.sources.catalog"


def test_every_compiled_model_equals_its_yaml() -> None:
    names = catalog_names()
    assert len(names) == 70
    for name in names:
        yaml_model = load_spec(os.fspath(CATALOG_DIR / f"{name}.yaml"), source_kind="catalog", default_name=name)
        assert load_catalog_model(name) == dataclasses.replace(yaml_model, source=f"catalog:{name}"), name


def test_every_catalog_model_has_a_parameter_count() -> None:
    """Weights are estimated from the parameter count (no GGUF): every model has one, from model-facts'
    total_params — '135M' as well as '8B' or '1T' (SmolLM2's were dropped once, so fit could not answer)."""
    counts = {name: load_catalog_model(name).n_params for name in catalog_names()}
    assert all(counts.values()), [n for n, c in counts.items() if not c]
    assert counts["smollm2-135m"] == 134_515_008 and counts["smollm2-360m"] == 361_821_120  # counted, exact
    assert counts["llama-3.1-8b"] == 8_030_261_248


def test_the_installed_package_carries_the_catalog(tmp_path) -> None:
    """The specs live in the top-level model_specs/ and the wheel ships them inside the package: an installed
    kvplan lists and sizes its catalog from any directory."""
    import importlib.metadata
    import json
    import subprocess
    import sys

    from helpers import ROOT

    from kvplan.sources.catalog import CATALOG_DIR

    shipped = {p.name for p in (ROOT / "model_specs").iterdir()}
    assert "catalog.json" in shipped and len([n for n in shipped if n.endswith(".yaml")]) == 70
    assert {p.name for p in CATALOG_DIR.iterdir()} >= shipped
    files = importlib.metadata.files("kvplan") or []
    installed = {f.name for f in files if f.parts[:2] == ("kvplan", "model_specs")}
    if installed:  # installed from the wheel (as .ci/run does), not in development mode
        assert installed == shipped
    out = subprocess.run([sys.executable, "-m", "kvplan", "models", "-o", "json"], capture_output=True, text=True,
                         cwd=tmp_path, check=True).stdout  # fmt: skip
    assert len(json.loads(out)["models"]) == 70
