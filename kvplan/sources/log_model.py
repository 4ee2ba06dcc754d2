"""The model a llama.cpp startup log loaded, described from the log alone: its loader's metadata dump
(`llama_model_loader: - kv N: KEY TYPE = VALUE`, the GGUF's own keys and types) read back into GGUF metadata and
described by the same rules as the file (kvplan.sources.metadata), for a user who has the log but not the model.

llama.cpp's loader (llama_model_loader, gguf_kv_to_str) prints every value cut to 40 characters, so a per-layer
array of a long model arrives cut: those llama.cpp also prints whole in its print_info block (n_head, n_head_kv,
n_ff, printed as a list where the layers differ) are taken from there. The tensors are not in the log, so the
model has no weights or compute graph: what needs them (the model and compute buffers) is for the file to say."""

from __future__ import annotations

import re
from typing import Any

from kvplan.errors import BadInputError, HParamsError
from kvplan.model import ModelDescription
from kvplan.sources.llamacpp_log import LlamaCppLog
from kvplan.sources.values import T_BOOL, T_F32, T_F64, T_STRING, VALUE_TYPE_NAMES, ArrayValue

#: the type names llama.cpp's loader prints (gguf_type_name: "str" for strings) → GGUF value types
_TYPES = {("str" if n == "string" else n): i for i, n in enumerate(VALUE_TYPE_NAMES) if n != "array"}
_INTS = frozenset(i for i, n in enumerate(VALUE_TYPE_NAMES) if n[0] in "ui")
_ARRAY = re.compile(r"arr\[(\w+),(\d+)\]$")
#: print_info's name of a per-layer value → the GGUF key (under the architecture) it was loaded from
_PER_LAYER = {"n_head": "attention.head_count", "n_head_kv": "attention.head_count_kv", "n_ff": "feed_forward_length"}
#: llama.cpp's loader cuts a printed value to this many characters, ending a cut one with "..."
_CUT = 40


def _scalar(type_id: int, text: str) -> Any:
    if type_id in _INTS:
        return int(text)
    if type_id in (T_F32, T_F64):
        return float(text)
    if type_id == T_BOOL:
        if text not in ("true", "false"):
            raise ValueError(text)
        return text == "true"
    return text


def _array(element: int, count: int, text: str) -> ArrayValue:
    """An array as printed: its values where the loader printed them whole, else only its type and length."""
    if len(text) >= _CUT and text.endswith("..."):
        return ArrayValue(element, count, None)
    if not (text.startswith("[") and text.endswith("]")) or element == T_STRING:
        return ArrayValue(element, count, None)  # (strings: kvplan reads no string array)
    inner = text[1:-1].strip()
    values = tuple(_scalar(element, v.strip()) for v in inner.split(",")) if inner else ()
    if len(values) != count:
        return ArrayValue(element, count, None)
    return ArrayValue(element, count, values)


def _per_layer(printed: str) -> tuple[int, ...] | None:
    """A print_info value as per-layer integers: a list where the layers differ, else None (one value for all)."""
    if not (printed.startswith("[") and printed.endswith("]")):
        return None
    try:
        return tuple(int(v) for v in printed[1:-1].split(","))
    except ValueError:
        return None


def metadata_of(log: LlamaCppLog, source: str) -> tuple[dict[str, Any], dict[str, int]]:
    """The GGUF metadata and value types the log's loader printed (per-layer arrays it cut, from print_info)."""
    kv: dict[str, Any] = {}
    types: dict[str, int] = {}
    for key, (type_name, text) in log.metadata.items():
        try:
            if m := _ARRAY.match(type_name):
                element = _TYPES.get(m.group(1))
                if element is None:
                    continue
                kv[key] = _array(element, int(m.group(2)), text)
                continue
            type_id = _TYPES.get(type_name)
            if type_id is None:
                continue
            if type_id == T_STRING and len(text) >= _CUT and text.endswith("..."):
                continue  # a string cut short is not the file's
            kv[key] = _scalar(type_id, text)
            types[key] = type_id
        except ValueError:
            raise BadInputError(f"{source}: the metadata dump's {key} ({type_name}) reads {text!r}") from None
    arch = kv.get("general.architecture")
    if isinstance(arch, str):
        for name, suffix in _PER_LAYER.items():
            key = f"{arch}.{suffix}"
            cut, whole = kv.get(key), _per_layer(log.model.get(name, ""))
            if isinstance(cut, ArrayValue) and cut.values is None and whole and len(whole) == cut.count:
                kv[key] = ArrayValue(cut.element_type, cut.count, whole)
    return kv, types


def model_from_log(log: LlamaCppLog, source: str) -> ModelDescription:
    """The model the log loaded, from its metadata dump; one clear error where the log has none or cuts a value
    the model's memory needs."""
    from kvplan.sources.metadata import describe

    if "general.architecture" not in log.metadata:
        raise BadInputError(
            f"{source}: the log has no metadata dump of its model (llama_model_loader's '- kv' lines); give the "
            "model with -m MODEL (a GGUF, spec, config.json, folder or catalog name)"
        )
    kv, types = metadata_of(log, source)
    name = kv.get("general.name")
    if not isinstance(name, str) or not name or name == "n/a":  # (as for a GGUF: the file's name)
        name = log.model_path.replace("\\", "/").rsplit("/", 1)[-1] or None
    try:
        return describe(kv, source=f"{source} (the log's metadata dump)", source_kind="log",
                        name=name, kv_types=types)  # fmt: skip
    except HParamsError as exc:
        raise BadInputError(
            f"{exc} - the log prints each value cut to {_CUT} characters; give the model with -m MODEL"
        ) from None
