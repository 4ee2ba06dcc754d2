"""Counts in: ``32k`` → 32768 tokens. (Sizes out: kvplan.report.format_size.)"""

from __future__ import annotations

import re

_COUNT_RE = re.compile(r"^\s*(\d+)\s*([kKmM]?)\s*$")


def parse_count(text: str) -> int:
    """A token or sequence count: ``4096``, ``32k``/``32K`` (×1024), ``1M`` (×1024²)."""
    m = _COUNT_RE.match(text)
    if not m:
        raise ValueError(f"{text!r} is not a count (examples: 4096, 32k, 128K, 1M)")
    n = int(m.group(1))
    unit = m.group(2).lower()
    return n * (1024 if unit == "k" else 1024 * 1024 if unit == "m" else 1)
