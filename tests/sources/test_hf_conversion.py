"""config.json → the same model as the GGUF llama.cpp's own converter writes from it, for every architecture
the converter registers (tests/fixtures/hf_conversion.json, recorded by scripts/record_hf_configs.py from
the vendored convert_hf_to_gguf.py with transformers 4.57.6: defaults-, small-, synth- and real- cases)."""

from __future__ import annotations

import json
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import pytest

from kvplan.errors import KvplanError
from kvplan.facts.hf_archs import HF_ARCHS
from kvplan.model import ModelDescription
from kvplan.runtimes.llamacpp.compute.archs import BUILDERS
from kvplan.sources.gguf_reader import T_BOOL, T_F32, T_I32, T_STRING, ArrayValue
from kvplan.sources.graph_facts import WIDTHS_NOT_PORTED, graph_facts
from kvplan.sources.hf_config import load_hf_config
from kvplan.sources.metadata import describe
from tests.helpers import FIXTURES

CASES: dict[str, dict[str, Any]] = json.loads((FIXTURES / "hf_conversion.json").read_text())
CONVERTED = sorted(k for k, v in CASES.items() if "gguf_kv" in v)
#: what a config.json adds for the serving engines, or a GGUF for its own source: not the converter's business
NOT_CONVERTED = {
    "expert_params",  # the roofline's: from a GGUF's tensors, else the hyperparameters (expert widths not ported)
    "name",
    "source",
    "source_kind",
    "notes",
    "weight_bytes",
    "n_params",
    "tensor_weights",
    "spec",
    "declared_window",
    "mm_prefix_lm",
    "hf_architecture",
    "vision_tower",
    "ctx_declared",
    "config_ctx",
    "weight_format",  # the checkpoint's storage and parameters (the serving engines' weights), not GGUF metadata
    "param_count",
    "params_source",
    "context_keys",  # what vLLM reads of the config's context (the engines'), not GGUF metadata
}


def _value(v: Any) -> Any:
    if not isinstance(v, list):
        return v
    kind = (
        T_BOOL
        if all(isinstance(x, bool) for x in v)
        else T_I32
        if all(isinstance(x, int) for x in v)
        else T_STRING
        if all(isinstance(x, str) for x in v)
        else T_F32
    )
    return ArrayValue(kind, len(v), tuple(v))


def _comparable(m: ModelDescription) -> dict[str, Any]:
    out = {f.name: getattr(m, f.name) for f in fields(m) if f.name not in NOT_CONVERTED}
    if m.recurrent_params is not None:  # the checkpoint's SSM cache dtype and kernel chunk are serving facts
        out["recurrent_params"] = replace(m.recurrent_params, cache_dtype="", chunk=0)
    out.pop("graph")  # compared on its own (test_config_gives_the_converted_graph_widths)
    return out


def _from_gguf(kv: dict[str, Any]) -> ModelDescription | KvplanError:
    meta = {k: _value(v) for k, v in kv.items()}
    ctx = f"{meta['general.architecture']}.context_length"
    meta.setdefault(ctx, 0)  # a GGUF without one: llama.cpp refuses it; kvplan takes -c for the config
    try:
        m = describe(meta, source="converted.gguf", source_kind="gguf")
        return replace(m, graph=graph_facts(meta, {}))
    except KvplanError as exc:
        return exc


def _from_config(case: dict[str, Any], tmp_path: Path) -> ModelDescription | KvplanError:
    (tmp_path / "config.json").write_text(json.dumps(case["config"]))
    if "safetensors_index" in case:
        (tmp_path / "model.safetensors.index.json").write_text(json.dumps(case["safetensors_index"]))
    try:
        return load_hf_config(str(tmp_path / "config.json"))
    except KvplanError as exc:
        return exc


@pytest.mark.parametrize("name", CONVERTED)
def test_config_describes_the_model_the_converter_writes(name: str, tmp_path: Path) -> None:
    case = CASES[name]
    gguf, config = _from_gguf(case["gguf_kv"]), _from_config(case, tmp_path)
    if isinstance(gguf, KvplanError):  # llama.cpp could not load the converted file: kvplan refuses the config
        assert isinstance(config, KvplanError), f"{name}: the GGUF is refused ({gguf}), the config is read"
        return
    assert not isinstance(config, KvplanError), f"{name}: {config}"
    assert _comparable(config) == _comparable(gguf)
    if f"{case['gguf_kv']['general.architecture']}.context_length" not in case["gguf_kv"]:
        assert not config.ctx_declared and config.n_ctx_train == 0  # -c decides (llama.cpp would refuse the GGUF)


@pytest.mark.parametrize("name", sorted(CONVERTED))
def test_config_gives_the_converted_graph_widths(name: str, tmp_path: Path) -> None:
    """For the architectures whose compute graph kvplan builds: the vocabulary, feed-forward and expert widths
    read from config.json equal the GGUF llama.cpp's converter wrote from it."""
    case = CASES[name]
    if case["gguf_kv"]["general.architecture"] not in BUILDERS:
        return
    gguf, config = _from_gguf(case["gguf_kv"]), _from_config(case, tmp_path)
    if isinstance(gguf, KvplanError):  # llama.cpp cannot load the converted file: the config is refused too
        assert isinstance(config, KvplanError), name
        return
    assert not isinstance(config, KvplanError)
    if WIDTHS_NOT_PORTED & set(case["config"].get("architectures") or ()):
        assert config.graph is None, name  # widths the port does not derive yet: no graph from the config
        return
    assert gguf.graph is not None
    if config.graph is None:  # a config without its feed-forward widths: the converted GGUF has none either
        assert (gguf.graph.n_ff, gguf.graph.n_ff_exp) == (0, 0), name
        return
    if gguf.graph.n_vocab == 0:  # the recording kept no vocabulary size: only the widths
        config = replace(config, graph=replace(config.graph, n_vocab=0))
    widths = ("n_vocab", "n_ff", "n_expert", "n_expert_used", "n_ff_exp", "n_layer_dense_lead", "n_expert_shared",
              "expert_weights_norm", "expert_weights_scale", "indexer_heads", "indexer_top_k")  # fmt: skip
    assert [getattr(config.graph, w) for w in widths] == [getattr(gguf.graph, w) for w in widths]


def test_every_registered_architecture_is_covered() -> None:
    """Each architecture the converter registers has a recorded case, converted or with the converter's reason."""
    named = {case["config"]["architectures"][0] for case in CASES.values()}
    missing = sorted(a for a, e in HF_ARCHS.items() if a not in named and "error" not in e)
    assert not missing
    assert len(CONVERTED) >= 320  # the recorded set; a re-recording that loses cases shows here


def test_the_proof_covers_families_of_every_memory_kind() -> None:
    archs = {CASES[n]["gguf_kv"]["general.architecture"] for n in CONVERTED}
    for arch in (
        "llama",
        "gemma3",
        "gemma3n",
        "deepseek2",
        "qwen3next",
        "qwen35",
        "mamba",
        "mamba2",
        "jamba",
        "falcon-h1",
        "granitehybrid",
        "nemotron_h",
        "lfm2",
        "kimi-linear",
        "rwkv6",
        "rwkv7",
        "plamo2",
        "bert",
    ):
        assert arch in archs, arch
