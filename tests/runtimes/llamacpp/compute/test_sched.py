"""Each device's compute buffer against llama.cpp's own, in bytes (tests/fixtures/oracle/compute_devices.json,
recorded by scripts/oracle/record_device_compute.py: llama.cpp's fit measurement, common_get_device_memory_data,
on one to four ggml RPC devices): every projection of the fit oracle and the placements it does not try (-nkvo,
-ot, -ts, partial -ngl over two devices, a larger ubatch) — the output layer's logits on the last device, the
inputs and the token embeddings in host memory, the copies of every split's inputs (four of each with pipeline
parallelism), MoE experts in host memory (-ncmoe, -cmoe) with their activations copied there and back. For every
architecture kvplan has the graph of (kvplan/runtimes/llamacpp/compute/archs.py); the others are counted, not
compared."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fit_projection import projected
from gguf_files import sparse_fit_model
from helpers import FIXTURES

import kvplan
from kvplan.model import ModelDescription
from kvplan.runtimes.llamacpp.compute.archs import BUILDERS

DOC = json.loads((FIXTURES / "oracle" / "compute_devices.json").read_text())
CASES: list[dict[str, Any]] = DOC["cases"]
#: the fit oracle's models: their llama.cpp architecture
ARCH = {"llama-3.1-8b": "llama", "qwen3-30b-a3b": "qwen3moe", "gemma-3-12b": "gemma3", "gpt-oss-20b": "gpt-oss",
        "gpt-oss-120b": "gpt-oss", "qwen3-next-80b-a3b": "qwen3next", "glm-4.5-air": "glm4moe",
        "deepseek-v3": "deepseek2"}  # fmt: skip
BUILT = [c for c in CASES if ARCH[c["model"]] in BUILDERS]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], ModelDescription]:
    folder: Path = tmp_path_factory.mktemp("devices")
    keys = sorted({(c["model"], c["type"]) for c in BUILT})
    return {k: kvplan.load_model(str(sparse_fit_model(folder / f"{k[0]}-{k[1]}.gguf", *k))) for k in keys}


def test_the_recording_covers_the_placements() -> None:
    assert len(CASES) >= 700 and not any("error" in c["bytes"] for c in CASES)
    assert {len(c["devices"]) for c in BUILT} == {1, 2, 3, 4}
    flags = {a for c in BUILT for a in c["args"]}
    assert {"-ngl", "-ncmoe", "-cmoe", "-nkvo", "-ot", "-ts", "-np", "-ub", "-ctk", "--swa-full", "-fa"} <= flags
    assert {ARCH[c["model"]] for c in BUILT} == set(ARCH.values())
    assert len(BUILT) == len(CASES) == 756


def _fast(c: dict[str, Any]) -> bool:
    """One placement of each kind per model: all layers on one and on two devices, and the extra placements."""
    return (c["args"] == ["-c", "8192"] and len(c["devices"]) <= 2 and c["devices"][0] in (24000, 8000)) or any(
        a in c["args"] for a in ("-nkvo", "-ot", "-ts")
    )


@pytest.mark.parametrize(
    "case",
    [c if _fast(c) else pytest.param(c, marks=pytest.mark.slow) for c in BUILT],
    ids=[f"{c['model']}-{c['type']}-{len(c['devices'])}dev-{' '.join(c['args'])}" for c in BUILT],
)
def test_compute_per_device_equals_llama_cpp(
    case: dict[str, Any], models: dict[tuple[str, str], ModelDescription]
) -> None:
    mine = projected(models[(case["model"], case["type"])], case["devices"], case["args"])
    assert mine == {name: row[2] for name, row in case["bytes"].items()}
