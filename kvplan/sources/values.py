"""GGUF's value types and the array value: what every source's metadata is made of (the GGUF reader's
vocabulary, shared with YAML specs, config.json conversions and the catalog without importing the reader)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# GGUF value types
T_U8, T_I8, T_U16, T_I16, T_U32, T_I32, T_F32, T_BOOL, T_STRING, T_ARRAY, T_U64, T_I64, T_F64 = range(13)
VALUE_TYPE_NAMES = (
    "u8",
    "i8",
    "u16",
    "i16",
    "u32",
    "i32",
    "f32",
    "bool",
    "string",
    "array",
    "u64",
    "i64",
    "f64",
)


@dataclass(frozen=True)
class SkippedString:
    """A string value too long to keep (the GGUF reader skips it unread): only its length. Not a ``str``, so a
    key kvplan needs that holds one is reported as the wrong type, never read as some other text."""

    length: int

    def __str__(self) -> str:
        return f"<a string of {self.length:,} bytes, not read>"


@dataclass(frozen=True)
class ArrayValue:
    """A GGUF array. ``values`` is None when the array was skipped for being large."""

    element_type: int
    count: int
    values: tuple[Any, ...] | None

    @property
    def element_type_name(self) -> str:
        return VALUE_TYPE_NAMES[self.element_type]
