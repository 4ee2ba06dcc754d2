"""The runtimes' names table (read before any runtime is imported) agrees with the engines' own classes."""

from __future__ import annotations

from kvplan.runtimes.engine_settings import EngineSettings
from kvplan.runtimes.engines import ENGINES
from kvplan.runtimes.names import CACHE_DTYPE_BYTES, ENGINE_NAMES, OWN_SETTINGS


def test_names_agree_with_the_engine_classes() -> None:
    assert set(ENGINE_NAMES) == set(ENGINES) == set(OWN_SETTINGS)
    for name, engine in ENGINES.items():
        assert ENGINE_NAMES[name] == (engine.label, engine.aliases)
        assert engine.own_settings is OWN_SETTINGS[name]  # read from the table, never retyped


def test_every_dtype_sizes_a_cache() -> None:
    for dtype, size in CACHE_DTYPE_BYTES.items():
        assert EngineSettings(kv_cache_dtype=dtype).dtype_bytes == size
