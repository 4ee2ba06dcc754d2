"""Hugging Face ``config.json`` (a file or a model folder) → :class:`ModelDescription`.

The config becomes the GGUF metadata llama.cpp's converter would write for it (hf_conversion.py), so it
goes through exactly the rules a GGUF file goes through; what the serving engines read from a config that
a GGUF does not carry (the HF architecture, a declared window, a vision tower) is added here.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from kvplan.errors import BadInputError
from kvplan.facts.hf_archs import CONVERTED_ARCHS
from kvplan.model import ContextKeys, ModelDescription, ParamCount, SwaType
from kvplan.sources.files import open_regular, read_json
from kvplan.sources.graph_facts import graph_facts_from_config
from kvplan.sources.hf_conversion import U32_MAX, autoconfig, config_to_metadata, stated_context
from kvplan.sources.metadata import describe
from kvplan.sources.param_count import ARCH_MODEL_TYPES, count_params
from kvplan.sources.safetensors import INDEX_FILE, SINGLE_FILE, Checkpoint, from_header, from_index, header_length
from kvplan.sources.state_hparams import with_config_state
from kvplan.sources.weight_format import read_weight_format

__all__ = ["config_to_metadata", "declared_window", "describe_config", "load_hf_config"]

#: families whose checkpoints may declare one sliding window for every layer that llama.cpp does not apply
#: but vLLM's model classes do (Llama / Mistral, Phi-3; Qwen2 only with use_sliding_window)
_DECLARED_WINDOW_ARCHS = frozenset({"llama", "phi3", "qwen2"})


def declared_window(cfg: dict[str, Any], arch: str) -> int:
    """The checkpoint's sliding window for every layer (transformers' rule: Qwen2 only with use_sliding_window)."""
    if arch not in _DECLARED_WINDOW_ARCHS or cfg.get("use_sliding_window") is False:
        return 0
    window = cfg.get("sliding_window")
    if isinstance(window, bool) or not isinstance(window, int) or not 0 < window <= U32_MAX:
        return 0
    return window


def load_hf_config(path: str) -> ModelDescription:
    """A ``config.json`` file, or a model folder that holds one (its safetensors index or header beside it give the
    checkpoint's tensor names, bytes and parameters)."""
    file = os.path.join(path, "config.json") if os.path.isdir(path) else path
    cfg = read_json(file, "a Hugging Face config.json")
    return describe_config(cfg, file, _local_checkpoint(os.path.dirname(file) or "."))


def describe_config(cfg: object, shown: str, checkpoint: Checkpoint | None = None) -> ModelDescription:
    """A parsed config.json (``shown`` names it) and what its checkpoint's safetensors say."""
    if not isinstance(cfg, dict):
        raise BadInputError(f"{shown}: expected a JSON object")
    ckpt = checkpoint or Checkpoint()
    kv = config_to_metadata(cfg, shown, ckpt.tensor_names)
    ctx_key = f"{kv['general.architecture']}.context_length"
    stated = ctx_key in kv
    if not stated:  # the GGUF would have no context_length (llama.cpp refuses it); here -c / --ctx decides
        kv[ctx_key] = 0
    model = describe(kv, source=shown, source_kind="hf-config", name=kv.get("general.name"), n_params=ckpt.n_params)
    facts = _serving_facts(cfg, model)
    facts["config_ctx"] = stated_context(cfg, shown)
    facts["checkpoint_bytes"] = ckpt.total_bytes
    facts["weight_format"] = read_weight_format(cfg, shown)
    full = autoconfig(cfg)  # the config as transformers' AutoConfig holds it (class defaults filled)
    facts["graph"] = graph_facts_from_config(full)
    facts["context_keys"] = _context_keys(full)
    counted = _count(cfg, full)
    if counted is not None:
        facts["param_count"] = counted
    if ckpt.n_params:
        facts["params_source"] = f"the safetensors beside {shown}"
    elif counted is not None:
        facts["n_params"] = counted.total
        facts["params_source"] = f"counted from {shown} ({counted.basis})"
    if not stated:
        facts["ctx_declared"] = False
    if model.arch not in CONVERTED_ARCHS:
        facts["notes"] = (
            *model.notes,
            f"{model.arch}: no recorded conversion proves kvplan's reading of its config.json (the converter "
            "needs more than a config for it); read by the converter's rules, compare with a converted GGUF",
        )
    return replace(model, **facts)


def _context_keys(full: dict[str, Any]) -> ContextKeys:
    """The context facts vLLM reads: its hf_text_config (a multimodal checkpoint's text_config), of the config as
    AutoConfig reads it (``full``)."""
    from kvplan.facts.vllm_context import context_keys

    text = full.get("text_config")
    return context_keys(text if isinstance(text, dict) else full)


def _count(cfg: dict[str, Any], full: dict[str, Any]) -> ParamCount | None:
    """The checkpoint's parameters from its architecture, its config read as AutoConfig reads it (``full``); a
    config without model_type is read again as its architecture's."""
    if not isinstance(cfg.get("model_type"), str):
        archs = cfg.get("architectures")
        arch = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else ""
        if arch in ARCH_MODEL_TYPES:
            full = autoconfig({**cfg, "model_type": ARCH_MODEL_TYPES[arch]})
    return count_params(full)


def _local_checkpoint(folder: str) -> Checkpoint:
    """The safetensors beside a config: the index of a sharded checkpoint, else a single file's header."""
    index = os.path.join(folder, INDEX_FILE)
    if os.path.isfile(index):
        return from_index(read_json(index, "a safetensors index"), index)
    single = os.path.join(folder, SINGLE_FILE)
    if not os.path.isfile(single):
        return Checkpoint()
    try:
        with open_regular(single) as fh:
            n = header_length(fh.read(8), single)
            header = fh.read(n)
    except OSError as exc:
        raise BadInputError(f"{single}: cannot read: {exc.strerror or exc}") from None
    if len(header) != n:
        raise BadInputError(f"{single}: the safetensors header is cut short")
    return from_header(header, single)


def _serving_facts(cfg: dict[str, Any], model: ModelDescription) -> dict[str, Any]:
    """What the serving engines read from the config that the GGUF metadata does not carry."""
    out: dict[str, Any] = {"hf_architecture": cfg["architectures"][0]}
    window = declared_window(cfg, model.arch)
    if window and model.swa_type == SwaType.NONE:
        out["declared_window"] = window
    vision = cfg.get("vision_config")
    if isinstance(vision, dict):
        layers, hidden = vision.get("num_hidden_layers", 24), vision.get("hidden_size", 1024)  # SGLang's defaults
        if all(isinstance(v, int) and not isinstance(v, bool) and 0 < v <= 1 << 20 for v in (layers, hidden)):
            out["vision_tower"] = (layers, hidden)
        if cfg.get("model_type") in ("gemma3", "paligemma"):
            out["mm_prefix_lm"] = True
    params = with_config_state(model.recurrent_params, cfg)
    if params is not model.recurrent_params:
        out["recurrent_params"] = params
    return out
