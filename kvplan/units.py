"""Units: byte constants, integer ceiling and padding, parsing counts / sizes / parameter counts, formatting.

Bytes are ``int`` from the sources to the renderers; GiB appears only here and in the report builders.
Every parser accepts what a person types (``32k``, ``24GiB``, ``7.6B``) and what YAML gives (ints, floats),
refuses NaN, infinities, absurd magnitudes and numbers whose unit was forgotten (``--memory 24``), and raises
``ValueError`` with a message the caller turns into a usage error or a file:line error.
"""

from __future__ import annotations

import math
import re
from enum import Enum

KIB = 1 << 10
MIB = 1 << 20
GIB = 1 << 30
TIB = 1 << 40

#: the largest count or size kvplan accepts (2^50: far beyond any context, memory or parameter count)
MAX_VALUE = 1 << 50


def cdiv(a: int, b: int) -> int:
    """Ceiling division of integers (vLLM's cdiv)."""
    return -(-a // b)


def pad_to(x: int, n: int) -> int:
    """``x`` rounded up to a multiple of ``n`` (GGML_PAD)."""
    return cdiv(x, n) * n


class Units(str, Enum):
    """How byte figures are printed: IEC (KiB, MiB, GiB), SI (kB, MB, GB) or plain bytes."""

    IEC = "iec"
    SI = "si"
    BYTES = "bytes"


_IEC = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
_SI = ("B", "kB", "MB", "GB", "TB", "PB")


def format_size(n: int | float, units: Units = Units.IEC) -> str:
    """Bytes in one unit system: ``4.94 GiB`` (IEC), ``5.30 GB`` (SI) or ``5,301,600,256`` (bytes)."""
    if units is Units.BYTES:
        return f"{round(n):,}"
    base, names = (1024, _IEC) if units is Units.IEC else (1000, _SI)
    value = float(n)
    for unit in names[:-1]:
        if abs(value) < base:
            return f"{round(value)} B" if unit == "B" else f"{value:.2f} {unit}"
        value /= base
    return f"{value:.2f} {names[-1]}"


def format_count(n: int) -> str:
    """A count with thousands separators: ``32,768``."""
    return f"{n:,}"


def ascii_float(text: str) -> float:
    """``float(text)`` for what a C program's strtod reads too: ASCII, no ``_`` digit groups (Python's float()
    takes ``１２`` and ``1_000``, llama.cpp and the engines do not)."""
    if not text.isascii() or "_" in text:
        raise ValueError(f"{text!r} is not a number")
    return float(text)


def _plain_number(value: object, what: str) -> float | None:
    """A YAML / JSON number as a finite float, or None when ``value`` is text to parse."""
    if isinstance(value, bool):
        raise ValueError(f"expected {what}, not {str(value).lower()}")
    if isinstance(value, int):
        if abs(value) > MAX_VALUE:
            raise ValueError(f"{value:.3e} is out of range for {what}")
        return float(value)
    if isinstance(value, float):
        if not math.isfinite(value) or abs(value) > MAX_VALUE:
            raise ValueError(f"{value!r} is not a usable number for {what}")
        return value
    if not isinstance(value, str):
        raise ValueError(f"expected {what}, not {type(value).__name__}")
    return None


_COUNT_RE = re.compile(r"^\s*(\d{1,16})\s*([kKmM]?)\s*$", re.ASCII)  # ASCII digits only, as llama.cpp reads them


def parse_count(value: object, *, minimum: int = 1) -> int:
    """A token or sequence count: ``4096``, ``32k``/``32K`` (×1024), ``1M`` (×1024²)."""
    number = _plain_number(value, "a count")
    if number is not None:
        if number != int(number):
            raise ValueError(f"{value!r} is not a whole number")
        n = int(number)
    else:
        m = _COUNT_RE.match(str(value))
        if not m:
            raise ValueError(f"{value!r} is not a count (examples: 4096, 32k, 128K, 1M)")
        unit = m.group(2).lower()
        n = int(m.group(1)) * (KIB if unit == "k" else MIB if unit == "m" else 1)
    if n < minimum:
        raise ValueError(f"{n} is below the minimum {minimum}")
    if n > MAX_VALUE:
        raise ValueError(f"{n} is out of range")
    return n


_SIZE_RE = re.compile(r"^\s*(\d{1,16}(?:\.\d{1,9})?)\s*([KMGTP]i?B?|B)?\s*$", re.IGNORECASE | re.ASCII)


def parse_size(value: object, *, allow_zero: bool = False) -> int:
    """Bytes: ``24GiB`` / ``24G`` (binary), ``24GB`` (decimal), ``512MiB``, ``1.5TiB``, or a plain byte count.

    A plain number below 1 MiB is refused as a forgotten unit (``24`` is almost surely not 24 bytes);
    0 is accepted where ``allow_zero``.
    """
    number = _plain_number(value, "a size")
    if number is not None:
        unit = None
    else:
        m = _SIZE_RE.match(str(value))
        if not m:
            raise ValueError(f"{value!r} is not a size (examples: 24GiB, 80GB, 512MiB)")
        number = float(m.group(1))
        unit = m.group(2)
    if unit is None or unit.upper() == "B":
        if number != int(number):
            raise ValueError(f"{value!r} is not a whole number of bytes")
        n = int(number)
        if n == 0 and allow_zero:
            return 0
        if unit is None and 0 <= n < MIB:
            raise ValueError(f"{value!r} would be {n} bytes; give a unit, e.g. {value}GiB or {value}MiB")
    else:
        u = unit.upper()
        power = "KMGTP".index(u[0]) + 1
        base = 1000 if u.endswith("B") and not u.endswith("IB") else 1024
        n = int(number * base**power)
    if n < 0 or (n == 0 and not allow_zero):
        raise ValueError(f"{value!r} must be positive")
    if n > MAX_VALUE:
        raise ValueError(f"{value!r} is out of range")
    return n


_PARAMS_RE = re.compile(r"^\s*(\d{1,16}(?:\.\d{1,9})?(?:[eE]\+?\d{1,2})?)\s*([KMBT]?)\s*$", re.IGNORECASE | re.ASCII)
_PARAMS_SCALE = {"": 1, "K": 10**3, "M": 10**6, "B": 10**9, "T": 10**12}


def parse_params(value: object) -> int:
    """A parameter count: ``8.03e9``, ``8030261248``, ``7.6B``, ``70B``, ``1.5T``, ``350M``.

    A plain number below one million is refused as a forgotten unit (``8`` → did you mean ``8B``?).
    """
    number = _plain_number(value, "a parameter count")
    scale = 1
    if number is None:
        m = _PARAMS_RE.match(str(value))
        if not m:
            raise ValueError(f"{value!r} is not a parameter count (examples: 8B, 70B, 8.03e9)")
        number = float(m.group(1))
        suffix = m.group(2).upper()
        scale = _PARAMS_SCALE[suffix]
        if not suffix and number < 1e6:
            raise ValueError(f"{value!r} would be {number:g} parameters; give a unit, e.g. {value}B")
    elif number < 1e6:
        raise ValueError(f"{value!r} would be {number:g} parameters; give a unit, e.g. {value}B")
    n = int(number * scale)
    if n <= 0 or n > MAX_VALUE:
        raise ValueError(f"{value!r} is not a plausible parameter count")
    return n


def parse_fraction(value: object, *, allow_percent: bool = False, upper_inclusive: bool = True) -> float:
    """A fraction in (0, 1] (``0.9``), or with ``allow_percent`` also ``90%``."""
    number = _plain_number(value, "a fraction")
    if number is None:
        text = str(value).strip()
        percent = allow_percent and text.endswith("%")
        try:
            number = ascii_float(text.removesuffix("%")) if percent else ascii_float(text)
        except ValueError:
            raise ValueError(f"{value!r} is not a fraction (examples: 0.9{', 90%' if allow_percent else ''})") from None
        if not math.isfinite(number):
            raise ValueError(f"{value!r} is not a fraction")
        if percent:
            number /= 100
    ok = 0 < number <= 1 if upper_inclusive else 0 <= number < 1
    if not ok:
        span = "(0, 1]" if upper_inclusive else "[0, 1)"
        raise ValueError(f"{value!r} is outside {span}")
    return number


def format_seconds(s: float) -> str:
    """A duration as a person reads it: 850 µs, 24.0 ms, 310 ms, 1.25 s, 1,234 s."""
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    if s < 1:
        return f"{s * 1e3:.3g} ms" if s < 0.1 else f"{s * 1e3:.0f} ms"
    return f"{s:.3g} s" if s < 100 else f"{s:,.0f} s"
