"""A checkpoint's tensors as a serving engine loads them: the bytes and parameters its safetensors hold.

``model.safetensors.index.json`` (sharded checkpoints) names every tensor and states ``metadata.total_size``
(and, in newer ones, ``total_parameters``); a single ``model.safetensors`` starts with an 8-byte length and a
JSON header giving each tensor's dtype, shape and byte range. Nothing past the header is read.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

from kvplan.errors import BadInputError
from kvplan.sources.files import parse_json

MAX_HEADER_BYTES = 100 << 20  # the safetensors format's own limit
INDEX_FILE = "model.safetensors.index.json"
SINGLE_FILE = "model.safetensors"


@dataclass(frozen=True)
class Checkpoint:
    tensor_names: tuple[str, ...] = ()
    total_bytes: int | None = None
    n_params: int | None = None


def from_index(data: object, shown: str) -> Checkpoint:
    """A parsed model.safetensors.index.json."""
    if not isinstance(data, dict) or not isinstance(data.get("weight_map"), dict):
        raise BadInputError(f"{shown}: weight_map is missing (expected an object of tensor names)")
    names = tuple(k for k in data["weight_map"] if isinstance(k, str))
    meta = data.get("metadata")
    total, params = (meta.get("total_size"), meta.get("total_parameters")) if isinstance(meta, dict) else (None, None)
    return Checkpoint(names, _count(total), _count(params))


def header_length(first8: bytes, shown: str) -> int:
    """The JSON header's length from a model.safetensors' first 8 bytes."""
    if len(first8) < 8:
        raise BadInputError(f"{shown}: too short for a safetensors file")
    (n,) = struct.unpack("<Q", first8[:8])
    if not 2 <= n <= MAX_HEADER_BYTES:
        raise BadInputError(f"{shown}: a safetensors header of {n:,} bytes (at most {MAX_HEADER_BYTES:,})")
    return int(n)


def from_header(header: bytes, shown: str) -> Checkpoint:
    """A model.safetensors' JSON header: tensor names, bytes (the end of the last tensor) and parameters."""
    try:
        text = header.decode("utf-8")
    except UnicodeDecodeError:
        raise BadInputError(f"{shown}: the safetensors header is not UTF-8") from None
    data = parse_json(text, shown)
    if not isinstance(data, dict):
        raise BadInputError(f"{shown}: the safetensors header is not a JSON object")
    names, end, params = [], 0, 0
    for name, info in data.items():
        if name == "__metadata__":
            continue
        offsets, shape = (info.get("data_offsets"), info.get("shape")) if isinstance(info, dict) else (None, None)
        if (
            not isinstance(offsets, list)
            or len(offsets) != 2
            or not all(_count(o) is not None for o in offsets)
            or not isinstance(shape, list)
            or not all(_count(d) is not None for d in shape)
        ):
            raise BadInputError(f"{shown}: tensor {name[:80]!r} has no valid data_offsets / shape")
        names.append(name)
        end = max(end, offsets[1])
        params += math.prod(shape)
    return Checkpoint(tuple(names), end, params)


def _count(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 60 else None
