"""How each option's value is read: one function per kind of value, raising ValueError with the message the user
sees after the flag (``-ctk: unknown cache type 'q8' (did you mean q8_0?)``) or after ``FILE:LINE: KEY:``.

Values arrive as the command line gives them (text, or True / False for a switch), as YAML gives them (numbers,
booleans, lists) or as a library caller passes them; every parser accepts all three. The simulation's and the
analysis' own readers are imported only when their option is given, so that parsing a request stays cheap.
"""

from __future__ import annotations

import difflib
import math
import re
import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kvplan.facts.ggml_types import LLAMA_CPP_CACHE_TYPES
from kvplan.runtimes.llamacpp.plan import Backend, FlashAttn
from kvplan.runtimes.names import CACHE_DTYPE_BYTES, SSM_DTYPES
from kvplan.units import ascii_float, parse_count, parse_fraction, parse_size

if TYPE_CHECKING:
    from kvplan.analysis.curve import Contexts
    from kvplan.simulation.workload import Lengths

Parser = Callable[[object], Any]


def count(minimum: int = 1) -> Callable[[object], int]:
    """A token or sequence count: 4096, 32k (×1024), 1M."""

    def parse(value: object) -> int:
        return parse_count(value, minimum=minimum)

    return parse


def count_or_off(value: object) -> int:
    """A count as ``count(1)`` reads it, or -1: the feature off (SGLang's --chunked-prefill-size -1)."""
    if value == -1 or (isinstance(value, str) and value.strip() == "-1"):
        return -1
    try:
        return parse_count(value, minimum=1)
    except ValueError as exc:
        raise ValueError(f"{exc}; or -1 for off") from None


def switch(value: object) -> bool:
    if isinstance(value, bool):
        return value
    raise ValueError(f"expected true or false, not {value!r}")


def close_match(key: str, choices: tuple[str, ...] | list[str], cutoff: float = 0.5) -> str:
    """`` (did you mean X?)`` for the nearest choice, or nothing."""
    close = difflib.get_close_matches(key, list(choices), n=1, cutoff=cutoff)
    return f" (did you mean {close[0]}?)" if close else ""


def choice(choices: tuple[str, ...], what: str) -> Callable[[object], str]:
    def parse(value: object) -> str:
        key = str(value).strip().lower()
        if key in choices:
            return key
        raise ValueError(f"unknown {what} {value!r}{close_match(key, choices)}; expected one of {', '.join(choices)}")

    return parse


cache_type = choice(LLAMA_CPP_CACHE_TYPES, "cache type")
kv_cache_dtype = choice(tuple(CACHE_DTYPE_BYTES), "KV cache dtype")
ssm_dtype = choice(SSM_DTYPES, "Mamba SSM cache dtype")

#: llama.cpp's is_truthy / is_falsey / is_autoy (common/arg.cpp): the spellings of -fa and --fit
TRUTHY = ("on", "enabled", "true", "1")
FALSY = ("off", "disabled", "false", "0")
AUTOY = ("auto", "-1")


def flash_attn(value: object) -> FlashAttn:
    """llama.cpp's -fa (YAML 1.1 reads on/off as booleans)."""
    if isinstance(value, bool):
        return FlashAttn.ON if value else FlashAttn.OFF
    key = str(value).strip().lower()
    for mode, spellings in ((FlashAttn.ON, TRUTHY), (FlashAttn.OFF, FALSY), (FlashAttn.AUTO, AUTOY)):
        if key in spellings:
            return mode
    raise ValueError(f"expected on, off or auto, not {value!r}")


def gpu_layers(value: object) -> int:
    """-ngl: a number of layers, auto (-1) or all (-2), as llama.cpp reads it (its own sentinels -1 and -2
    included)."""
    key = str(value).strip().lower()
    if key in ("auto", "-1"):
        return -1
    if key in ("all", "-2"):
        return -2
    return parse_count(value, minimum=0)


def spec_type(value: object) -> bool:
    """--spec-type TYPE[,TYPE]: whether llama-server runs an MTP draft context (draft-mtp)."""
    types = [t.strip().lower() for t in str(value).split(",") if t.strip()]
    if not types:
        raise ValueError("expected speculative types such as draft-mtp")
    return "draft-mtp" in types


def overrides(value: object) -> tuple[tuple[str, str], ...]:
    """-ot PATTERN=BUFT[,PATTERN=BUFT...]: llama.cpp's tensor buffer overrides (regexes searched in tensor
    names; the buffer: CPU, or a device by index)."""
    out = []
    for item in str(value).split(","):
        pattern, eq, buft = item.partition("=")
        if not eq or not pattern or not buft:
            raise ValueError(f"expected PATTERN=BUFFER pairs such as 'exps=CPU', not {item!r}")
        from kvplan.runtimes.llamacpp.overrides import compiled
        from kvplan.runtimes.llamacpp.pattern import PatternError

        try:
            compiled(pattern)
        except PatternError as exc:
            raise ValueError(f"{pattern!r} is not a regular expression llama.cpp's std::regex reads ({exc})") from None
        if "[" in buft:  # llama.cpp names an RPC device by its endpoint, not by its place among the GPUs
            raise ValueError(f"{buft!r}: name the GPU by its place instead, GPU0, GPU1, ... (or CUDA0, ...)")
        if buft.upper() != "CPU" and not re.match(r"^[A-Za-z]+(\d+)$", buft):
            raise ValueError(f"unknown buffer {buft!r}; expected CPU or a GPU such as CUDA0 or GPU1")
        out.append((pattern, buft))
    return tuple(out)


def proportions(value: object) -> tuple[float, ...]:
    """-ts 3,1 (llama.cpp also splits on /): finite, non-negative; all zero is llama.cpp's default split (by each
    device's memory: load_tensors' all_zero), as none given."""
    items: list[object] = (
        list(value) if isinstance(value, (list, tuple)) else list(str(value).replace("/", ",").split(","))
    )
    out = []
    for item in items:
        try:
            x = (
                (ascii_float(item) if isinstance(item, str) else float(item))
                if isinstance(item, (int, float, str)) and not isinstance(item, bool)
                else math.nan
            )
        except (TypeError, ValueError):
            raise ValueError(f"expected proportions such as 3,1, not {value!r}") from None
        if not math.isfinite(x) or x < 0 or x > 1e6:
            raise ValueError(f"proportions must be finite numbers from 0 to 1e6, not {item!r}")
        out.append(float(struct.unpack("f", struct.pack("f", x))[0]))  # llama.cpp's float: 1e-300 is 0
    if not out:
        raise ValueError(f"expected proportions such as 3,1, not {value!r}")
    return tuple(out)


def backend(value: object) -> Backend:
    return Backend(choice(tuple(b.value for b in Backend), "backend")(value))


def sizes(value: object) -> tuple[int, ...]:
    items = value if isinstance(value, (list, tuple)) else str(value).split(",")
    return tuple(parse_size(item) for item in items)


def sizes0(value: object) -> tuple[int, ...]:
    items = value if isinstance(value, (list, tuple)) else str(value).split(",")
    return tuple(parse_size(item, allow_zero=True) for item in items)


def size(value: object) -> int:
    return parse_size(value)


def size0(value: object) -> int:
    return parse_size(value, allow_zero=True)


def text(value: object) -> str:
    if not isinstance(value, (str, int)) or isinstance(value, bool) or not str(value).strip():
        raise ValueError(f"expected text, not {value!r}")
    return str(value).strip()


def gpu(value: object) -> str:
    if isinstance(value, str) and not value.strip():
        raise ValueError("empty; give a GPU preset such as RTX-4090 or H100-80GBx4 (`kvplan gpus` lists them)")
    return text(value)


def auto_only(value: object) -> bool:
    if str(value).strip().lower() != "auto":
        raise ValueError(f"the only value is auto, not {value!r}")
    return True


def max_model_len(value: object) -> int | None:
    """vLLM's --max-model-len: tokens per sequence; -1 (or auto) = the longest that fits (vLLM's auto-fit)."""
    if str(value).strip().lower() in ("-1", "auto"):
        return None
    return parse_count(value, minimum=1)


def headroom(value: object) -> float:
    return parse_fraction(value, allow_percent=True, upper_inclusive=False)


def fraction(value: object) -> float:
    return parse_fraction(value)


def on_off(value: object) -> bool:
    """llama.cpp's --fit on|off (its is_truthy / is_falsey)."""
    if isinstance(value, bool):
        return value
    key = str(value).strip().lower()
    if key in TRUTHY:
        return True
    if key in FALSY:
        return False
    raise ValueError(f"expected on or off, not {value!r}")


def mib_per_device(value: object) -> tuple[int, ...]:
    """--fit-target: MiB each GPU keeps free, one value or one per GPU (llama.cpp's -fitt 1024,2048; it also
    splits on /)."""
    items = value if isinstance(value, (list, tuple)) else str(value).replace("/", ",").split(",")
    try:
        out = tuple(int(str(x).strip()) for x in items)
        if not out or any(v < 0 or v > 1 << 30 for v in out):
            raise ValueError
    except ValueError:
        raise ValueError(f"expected MiB per device, 1024 or 1024,2048, not {value!r}") from None
    return out


def tokens(value: object) -> int:
    """A whole number of tokens from 1 to 2^24 (--fit-ctx)."""
    key = str(value).strip()
    if isinstance(value, bool) or not key.isdigit() or not 0 < int(key) <= 1 << 24:
        raise ValueError(f"expected a whole number of tokens, not {value!r}")
    return int(key)


def bounded(low: float, high: float, *, integer: bool = False) -> Callable[[object], float]:
    """A number from ``low`` to ``high`` (a whole one with ``integer``)."""

    def parse(value: object) -> float:
        try:
            x = ascii_float(str(value)) if not isinstance(value, bool) else math.nan
        except ValueError:
            x = math.nan
        if not low <= x <= high or (integer and x != int(x)):
            kind = "a whole number" if integer else "a number"
            raise ValueError(f"expected {kind} from {low:g} to {high:g}, not {value!r}")
        return x

    return parse


def whole(low: int, high: int) -> Callable[[object], int]:
    number = bounded(low, high, integer=True)

    def parse(value: object) -> int:
        return int(number(value))

    return parse


def lengths(value: object) -> Lengths:
    """A token-length distribution: N, uniform:LO:HI or lognormal:MEDIAN:SIGMA."""
    from kvplan.simulation.workload import parse_lengths

    return parse_lengths(str(value))


def contexts(value: object) -> Contexts:
    """compare's and curve's -c: 8k,32k,128k (a list), 1k:128k (doubling) or 1k:64k:4k (a step)."""
    from kvplan.analysis.curve import parse_contexts

    return parse_contexts(str(value))


def events(what: str) -> Callable[[object], int]:
    """A whole number of ``what`` (preemptions, failed requests), 0 or more."""

    def parse(value: object) -> int:
        key = str(value).strip()
        if isinstance(value, bool) or not re.fullmatch(r"[0-9]+", key):
            raise ValueError(f"expected a whole number of {what} (0 or more), not {value!r}")
        return int(key)

    return parse


_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*(us|µs|ms|s)?\s*$", re.IGNORECASE)
_SECONDS = {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "": 1.0}


def duration(value: object) -> float:
    """A duration: seconds, or with us / ms / s (500ms, 2s)."""
    m = _DURATION.match(str(value))
    seconds = math.nan if m is None or isinstance(value, bool) else float(m.group(1)) * _SECONDS[m[2].lower()]
    if not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"expected a duration such as 500ms or 2s, not {value!r}")
    return seconds


def share(value: object) -> float:
    """A share in (0, 1]: 90% or 0.9."""
    key = str(value).strip()
    try:
        x = ascii_float(key[:-1]) / 100 if key.endswith("%") else ascii_float(key)
    except ValueError:
        x = math.nan
    if isinstance(value, bool) or not 0 < x <= 1:
        raise ValueError(f"expected a share, 90% or 0.9, not {value!r}")
    return x
