"""YAML model specs: a readable form of GGUF metadata, validated with file, line and key.

A spec names an architecture llama.cpp knows and gives its GGUF metadata; the ``{arch}.`` prefix
is implied and nested maps join with ".". The metadata then goes through exactly the rules a GGUF
file goes through (kvplan.sources.metadata). Format reference: README, "YAML model specs".
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any

from kvplan.errors import HParamsError, SpecError
from kvplan.facts.gguf_keys import ARCH_KEYS
from kvplan.model import ModelDescription, SpecInfo
from kvplan.sources.files import Node, did_you_mean, load_nodes, plain, read_text
from kvplan.sources.metadata import describe
from kvplan.sources.values import T_BOOL, T_F32, T_I32, T_STRING, ArrayValue
from kvplan.sources.weight_format import with_checkpoint

TOP_LEVEL_KEYS = {
    "name": "the catalog / display name",
    "arch": "GGUF general.architecture (required)",
    "description": "free text",
    "hf_id": "the Hugging Face repository id",
    "params": "total parameter count (number, e.g. 8.03e9)",
    "active_params": "an MoE's parameters active per token (number, e.g. 3.3e9): the roofline's FLOPs",
    "metadata": "GGUF metadata (required)",
    "sources": "where the numbers come from (list)",
    "notes": "free text or list of text",
    "status": "verification status from the facts file",
    "family": "the model family (catalog grouping: llama, qwen, gemma, ...)",
    "params_source": "where the parameter count comes from (text)",
    "checkpoint": "the checkpoint's weights: format (bf16, fp16, fp32, mxfp4, fp8), block, source, and config "
    "(its config.json's weight-shaping fields: the parameters are counted from them)",
}
#: the keys of a spec's checkpoint block
CHECKPOINT_KEYS = ("format", "block", "source", "config", "config_source", "published")
WEIGHT_FORMATS = ("bf16", "fp16", "fp32", "mxfp4", "fp8")
_ABSOLUTE_PREFIXES = ("general.", "tokenizer.", "split.")


def _flatten(node: Node, prefix: str, out: dict[str, Node]) -> None:
    for key, child in node.value.items():
        full = f"{prefix}.{key}" if prefix else key
        if isinstance(child.value, dict):
            _flatten(child, full, out)
        else:
            out[full] = child


def _to_gguf_value(path: str, key: str, node: Node) -> Any:
    v = node.value
    if isinstance(v, list):
        items = [item.value for item in v]
        if not items:
            raise SpecError(path, node.line, key, "empty list (leave the key out instead)")
        if all(isinstance(x, bool) for x in items):
            return ArrayValue(T_BOOL, len(items), tuple(items))
        if all(isinstance(x, int) and not isinstance(x, bool) for x in items):
            if any(x < -(2**31) or x >= 2**31 for x in items):
                raise SpecError(path, node.line, key, "list values must fit in 32 bits")
            return ArrayValue(T_I32, len(items), tuple(items))
        if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in items):
            return ArrayValue(T_F32, len(items), tuple(float(x) for x in items))
        if all(isinstance(x, str) for x in items):
            return ArrayValue(T_STRING, len(items), tuple(items))
        raise SpecError(
            path,
            node.line,
            key,
            "a list must hold only integers, only numbers, only booleans or only strings",
        )
    if v is None:
        raise SpecError(path, node.line, key, "has no value")
    if isinstance(v, (bool, int, float, str)):
        if isinstance(v, int) and not isinstance(v, bool) and v < 0:
            raise SpecError(path, node.line, key, f"must not be negative (got {v})")
        return v
    raise SpecError(path, node.line, key, f"unsupported value {v!r}")


def _top(root: Node, path: str) -> tuple[dict[str, Node], str, Node]:
    """The top-level mapping, the architecture and the metadata node, each checked."""
    if not isinstance(root.value, dict):
        raise SpecError(path, root.line, None, "expected a mapping with 'arch' and 'metadata' at the top level")
    top: dict[str, Node] = root.value
    for key, node in top.items():
        if key not in TOP_LEVEL_KEYS:
            hint = did_you_mean(key, TOP_LEVEL_KEYS) or f"; allowed: {', '.join(TOP_LEVEL_KEYS)}"
            raise SpecError(path, node.line, key, f"unknown top-level key{hint}")
    if "arch" not in top:
        raise SpecError(path, root.line, "arch", "missing (the GGUF architecture, e.g. llama, qwen3, gemma3)")
    arch_node = top["arch"]
    if not isinstance(arch_node.value, str) or not arch_node.value:
        raise SpecError(path, arch_node.line, "arch", "must be an architecture name such as 'llama'")
    if "metadata" not in top:
        raise SpecError(path, root.line, "metadata", "missing (the model's GGUF metadata)")
    if not isinstance(top["metadata"].value, dict):
        raise SpecError(path, top["metadata"].line, "metadata", "must be a mapping of GGUF keys")
    return top, arch_node.value, top["metadata"]


def _metadata(path: str, arch: str, meta_node: Node) -> tuple[dict[str, Any], dict[str, int]]:
    """GGUF keys and values (the ``{arch}.`` prefix implied), and the line of each key."""
    flat: dict[str, Node] = {}
    _flatten(meta_node, "", flat)
    kv: dict[str, Any] = {"general.architecture": arch}
    lines: dict[str, int] = {}
    for key, node in flat.items():
        if key.startswith(_ABSOLUTE_PREFIXES):
            full = key
        else:
            rel = key[len(arch) + 1 :] if key.startswith(arch + ".") else key
            if rel not in ARCH_KEYS:
                hint = did_you_mean(rel, ARCH_KEYS)
                raise SpecError(path, node.line, f"metadata.{key}", f"not a GGUF key llama.cpp reads{hint}")
            full = f"{arch}.{rel}"
        kv[full] = _to_gguf_value(path, f"metadata.{key}", node)
        lines[full] = node.line
    return kv, lines


def _params(path: str, top: dict[str, Node], key: str = "params") -> int | None:
    if key not in top:
        return None
    value = top[key].value
    if isinstance(value, str):  # YAML 1.1 reads 12.2e9 (no sign in the exponent) as text
        with contextlib.suppress(ValueError):
            value = float(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1e15:
        raise SpecError(path, top[key].line, key, f"must be a positive number (got {value!r})")
    return int(value)


def _checkpoint(path: str, top: dict[str, Node], params: int | None) -> dict[str, Any] | None:
    """The spec's checkpoint block, checked: a known format, a config kvplan counts whose count is ``params``."""
    if "checkpoint" not in top:
        return None
    node = top["checkpoint"]
    if not isinstance(node.value, dict):
        raise SpecError(path, node.line, "checkpoint", "must be a mapping (format, source, config)")
    for key, child in node.value.items():
        if key not in CHECKPOINT_KEYS:
            raise SpecError(path, child.line, f"checkpoint.{key}", f"unknown key{did_you_mean(key, CHECKPOINT_KEYS)}")
    block = {k: plain(v) for k, v in node.value.items()}
    fmt = block.get("format")
    if fmt is not None and fmt not in WEIGHT_FORMATS:
        raise SpecError(path, node.value["format"].line, "checkpoint.format",
                        f"expected one of {', '.join(WEIGHT_FORMATS)} (got {fmt!r})")  # fmt: skip
    dims = block.get("block")
    if dims is not None and not (
        isinstance(dims, list) and len(dims) == 2 and all(isinstance(d, int) and 0 < d < 1 << 16 for d in dims)
    ):
        raise SpecError(path, node.value["block"].line, "checkpoint.block", "expected two sizes, e.g. [128, 128]")
    config = block.get("config")
    if config is not None:
        from kvplan.sources.param_count import count_params

        line = node.value["config"].line
        counted = count_params(config) if isinstance(config, dict) else None
        if counted is None:
            raise SpecError(path, line, "checkpoint.config", "not a config.json whose parameters kvplan counts "
                            "(the families: README, 'Weights')")  # fmt: skip
        if params is not None and params != counted.total:
            why = f"{params:,} disagrees with the {counted.total:,} counted from checkpoint.config"
            raise SpecError(path, top["params"].line, "params", why)
    return block


@dataclasses.dataclass(frozen=True)
class SpecParts:
    """A spec read and checked: its GGUF metadata, name, parameters and description of itself."""

    kv: dict[str, Any]
    name: str | None
    params: int | None
    info: SpecInfo
    active_params: int | None = None
    params_source: str | None = None
    checkpoint: dict[str, Any] | None = None


def _read(
    text: str, path: str, default_name: str | None
) -> tuple[dict[str, Node], str, Node, dict[str, Any], dict[str, int], str | None]:
    """The spec's top-level keys, arch, metadata node, metadata as GGUF keys (and their lines), and name."""
    root = load_nodes(text, path, "the file is empty; expected a mapping with 'arch' and 'metadata'")
    top, arch, meta_node = _top(root, path)
    kv, lines = _metadata(path, arch, meta_node)
    name = top["name"].value if "name" in top else default_name
    if name is not None and not isinstance(name, str):
        raise SpecError(path, top["name"].line, "name", "must be text")
    return top, arch, meta_node, kv, lines, name


def spec_parts(text: str, path: str, default_name: str | None = None) -> SpecParts:
    """The spec's parts, each checked with file, line and key (the catalog is compiled from these)."""
    top, _, _, kv, _, name = _read(text, path, default_name)
    params = _params(path, top)
    return SpecParts(
        kv,
        name,
        params,
        _spec_info(path, top),
        _params(path, top, "active_params"),
        _text(path, top, "params_source"),
        _checkpoint(path, top, params),
    )


def load_spec_text(
    text: str,
    path: str,
    source_kind: str = "yaml",
    default_name: str | None = None,
) -> ModelDescription:
    top, arch, meta_node, kv, lines, name = _read(text, path, default_name)
    params = _params(path, top)
    block = _checkpoint(path, top, params)
    try:
        model = describe(kv, source=path, source_kind=source_kind, name=name, n_params=params)
    except HParamsError as exc:
        # point at the offending line when the message names a key of the spec
        message = str(exc)
        for full, line in lines.items():
            if f": {full}:" in message:
                key = f"metadata.{full.removeprefix(arch + '.')}"
                raise SpecError(path, line, key, message.split(f": {full}: ", 1)[-1]) from None
        raise SpecError(path, meta_node.line, "metadata", message.removeprefix(f"{path}: ")) from None
    model = dataclasses.replace(model, spec=_spec_info(path, top), n_active_params=_params(path, top, "active_params"))
    return with_checkpoint(model, block, _text(path, top, "params_source"), path)


def _text(path: str, top: dict[str, Node], key: str) -> str | None:
    if key not in top:
        return None
    value = top[key].value
    if not isinstance(value, str):
        raise SpecError(path, top[key].line, key, "must be text")
    return value


def _spec_info(path: str, top: dict[str, Node]) -> SpecInfo:
    """The spec's own description of itself (catalog fields), typed."""
    sources: list[str] = []
    if "sources" in top:
        node = top["sources"]
        if not isinstance(node.value, list):
            raise SpecError(path, node.line, "sources", "must be a list")
        for item in node.value:
            value = plain(item)
            if isinstance(value, dict):
                ref = value.get("ref") or value.get("id")
                sources.append(str(ref) if ref is not None else str(value))
            else:
                sources.append(str(value))
    return SpecInfo(
        hf_id=_text(path, top, "hf_id"),
        description=_text(path, top, "description"),
        sources=tuple(sources),
        status=_text(path, top, "status"),
        family=_text(path, top, "family"),
    )


def load_spec(path: str, source_kind: str = "yaml", default_name: str | None = None) -> ModelDescription:
    return load_spec_text(read_text(path, "a YAML model spec"), path, source_kind, default_name)
