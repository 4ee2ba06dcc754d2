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
