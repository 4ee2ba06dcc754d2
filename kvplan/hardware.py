"""GPUs and sizes: the built-in GPU table (extensible by YAML) and parsing of ``24GiB`` / ``H100-80GBx4``.

Where a source gives it, a preset is the total memory the driver reports (NVML / nvidia-smi, in MiB): an "80GB"
H100 shows 81,559 MiB (79.65 GiB). The others are the vendors' nominal capacities. CUDA itself reports a little
less again (vLLM logs ``total_gpu_memory (79.11–79.33GiB)`` on 80 GB parts, depending on the driver); pass
``--memory`` with your own figure for exact budgets.
"""

from __future__ import annotations

import re

from kvplan.errors import BadInputError

GIB = 1 << 30

#: name → the vendor's nominal memory in GiB
NOMINAL_GIB: dict[str, float] = {
    "T4": 16, "V100-16GB": 16, "V100-32GB": 32, "A10": 24, "A10G": 24, "L4": 24, "L40": 48, "L40S": 48,
    "A40": 48, "RTX-3090": 24, "RTX-4090": 24, "RTX-5090": 32, "RTX-A6000": 48, "RTX-6000-ADA": 48,
    "RTX-PRO-6000": 96, "A100-40GB": 40, "A100-80GB": 80, "H100-80GB": 80, "H100-NVL": 94, "H200": 141,
    "GH200": 96, "B200": 180, "B300": 288, "MI210": 64, "MI250X": 128, "MI300X": 192, "MI325X": 256,
    "MI355X": 288,
}  # fmt: skip
#: totals as NVML / nvidia-smi report them, MiB. Sources: Modal, "Why does an NVIDIA H100 80GB card offer
#: 85.52 GB?" (thundergolfer.com/blog/nvidia-gpu-memory-capacity) for H200 … T4; vLLM issues #7553 / #7768
#: (nvidia-smi "24564MiB") for the RTX 4090.
REPORTED_MIB: dict[str, int] = {
    "H200": 143771, "H100-80GB": 81559, "A100-80GB": 81920, "A100-40GB": 40960, "A10": 23028, "L40S": 46068,
    "L4": 23034, "T4": 15360, "RTX-4090": 24564,
}  # fmt: skip
#: name → memory in GiB as kvplan uses it: the reported total where sourced, else the nominal size
GPUS: dict[str, float] = {name: REPORTED_MIB[name] / 1024 if name in REPORTED_MIB else gib
                          for name, gib in NOMINAL_GIB.items()}  # fmt: skip

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B?|B)?\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """``24GiB`` / ``24G`` (binary), ``24GB`` (decimal), ``512MiB``, ``1.5TiB`` or plain bytes → bytes."""
    m = _SIZE_RE.match(text)
    if not m:
        raise ValueError(f"{text!r} is not a size (examples: 24GiB, 80GB, 512MiB)")
    value = float(m.group(1))
    unit = (m.group(2) or "B").upper()
    if unit == "B":
        return int(value)
    power = "KMGT".index(unit[0]) + 1
    base = 1000 if unit.endswith("B") and not unit.endswith("IB") else 1024
    return int(value * base**power)


def gpu_memory(spec: str, extra: dict[str, float] | None = None) -> list[int]:
    """``H100-80GB``, ``H100-80GBx4`` or ``2xRTX-4090`` → one byte count per GPU."""
    return parse_gpus(spec, extra)[0]


def memory_label(memory: list[int]) -> str:
    """``24.00 GiB + 24.00 GiB`` for GPUs given by size."""
    from kvplan.report import format_size

    return " + ".join(format_size(m) for m in memory)


def parse_gpus(spec: str, extra: dict[str, float] | None = None) -> tuple[list[int], str]:
    """One byte count per GPU, and a label such as ``4 × H100-80GB``."""
    table = {k.upper(): v for k, v in {**GPUS, **(extra or {})}.items()}
    m = re.fullmatch(r"\s*(?:(\d+)\s*[xX×]\s*)?(.+?)(?:\s*[xX×]\s*(\d+))?\s*", spec)
    assert m is not None
    count = int(m.group(1) or m.group(3) or 1)
    name = m.group(2).upper()
    if name not in table:
        close = [g for g in GPUS if name.split("-")[0] in g.upper()]
        hint = f" (did you mean {', '.join(close)}?)" if close else f"; known: {', '.join(GPUS)}"
        raise BadInputError(f"unknown GPU {m.group(2)!r}{hint}; or give --memory 24GiB[,24GiB]")
    if not 1 <= count <= 64:
        raise BadInputError(f"GPU count {count} is outside 1..64")
    label = f"{count} × {m.group(2).strip()}" if count > 1 else m.group(2).strip()
    return [int(table[name] * GIB)] * count, label


def load_gpu_file(path: str) -> dict[str, float]:
    """A YAML mapping ``NAME: memory`` (``24GiB`` or a number of GiB) that extends the built-in table."""
    import yaml

    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh)
    except (OSError, yaml.YAMLError) as exc:
        raise BadInputError(f"{path}: cannot read the GPU table: {exc}") from None
    if not isinstance(data, dict):
        raise BadInputError(f"{path}: expected a mapping NAME: memory")
    out = {}
    for name, value in data.items():
        try:
            out[str(name)] = float(value) if isinstance(value, (int, float)) else parse_size(str(value)) / GIB
        except ValueError as exc:
            raise BadInputError(f"{path}: {name}: {exc}") from None
    return out
