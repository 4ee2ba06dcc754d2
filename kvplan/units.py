"""Sizes in and out: ``32k`` → 32768 tokens, bytes → "512.00 MiB" (IEC, never mixed with SI)."""

from __future__ import annotations

import re

_COUNT_RE = re.compile(r"^\s*(\d+)\s*([kKmM]?)\s*$")
_IEC = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def parse_count(text: str) -> int:
    """A token or sequence count: ``4096``, ``32k``/``32K`` (×1024), ``1M`` (×1024²)."""
    m = _COUNT_RE.match(text)
    if not m:
        raise ValueError(f"{text!r} is not a count (examples: 4096, 32k, 128K, 1M)")
    n = int(m.group(1))
    unit = m.group(2).lower()
    return n * (1024 if unit == "k" else 1024 * 1024 if unit == "m" else 1)


def format_bytes(n: int | float) -> str:
    """IEC units with two decimals: 536870912 → '512.00 MiB'; below 1 KiB plain bytes."""
    value = float(n)
    for unit in _IEC:
        if abs(value) < 1024 or unit == _IEC[-1]:
            return f"{int(value)} B" if unit == "B" else f"{value:.2f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")
