"""GPUs: the built-in table (extensible by a YAML file), and parsing ``H100-80GB``, ``4xH100-80GB``, ``RTX4090``.

Where a source gives it, a preset is the total memory the driver reports (NVML / nvidia-smi, in MiB): an "80GB"
H100 shows 81,559 MiB (79.65 GiB). The others are the vendors' nominal capacities. CUDA itself reports a little
less again (vLLM logs ``total_gpu_memory (79.11–79.33GiB)`` on 80 GB parts, depending on the driver); pass
``--memory`` with your own figure for exact budgets.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from kvplan.units import GIB, MIB, format_size, parse_size

#: where a reported total comes from
_MODAL = "nvidia-smi total (Modal, thundergolfer.com/blog/nvidia-gpu-memory-capacity)"
_VLLM_4090 = "nvidia-smi total 24564MiB (vLLM issues #7553, #7768)"


@dataclass(frozen=True)
class GPUModel:
    name: str
    memory_bytes: int
    source: str  # "nominal" or where the reported total comes from
    capability: tuple[int, int] | None = None  # CUDA compute capability (None: not an NVIDIA GPU)
    #: the roofline's columns (simulate, curve --gpu): memory bandwidth (bytes/s), dense BF16 (FP16 where the part
    #: has no BF16) tensor-core peak (FLOP/s) and their datasheet, the "with sparsity" figures halved; None: the
    #: flags --bandwidth and --peak-tflops give them
    perf: tuple[float, float, str] | None = None

    @property
    def family(self) -> str:
        """The generation the serving engines pick kernels by: hopper (sm90), blackwell (sm100), other."""
        if self.capability is None:
            return "other"
        return {9: "hopper", 10: "blackwell"}.get(self.capability[0], "other")


def _gpu(
    name: str, gib: float, reported_mib: int | None = None, source: str = "", cap: tuple[int, int] | None = None
) -> GPUModel:
    perf = _PERF.get(name)
    if reported_mib is not None:
        return GPUModel(name, reported_mib * MIB, source, cap, perf)
    return GPUModel(name, int(gib * GIB), "nominal", cap, perf)


#: the roofline's bandwidth, dense peak and datasheet, by preset (GPUModel.perf)
_PERF: dict[str, tuple[float, float, str]] = {
    "A10": (600e9, 125e12, "NVIDIA A10 datasheet: 600 GB/s, BF16 125 TFLOPS (250 with sparsity)"),
    "A40": (696e9, 149.7e12, "NVIDIA A40 datasheet: 696 GB/s, BF16 149.7 TFLOPS (299.4 with sparsity)"),
    "A100-40GB": (1555e9, 312e12, "NVIDIA A100 datasheet (SXM): 1,555 GB/s, BF16 312 TFLOPS"),
    "A100-80GB": (2039e9, 312e12, "NVIDIA A100 datasheet (SXM): 2,039 GB/s, BF16 312 TFLOPS"),
    "L4": (300e9, 121e12, "NVIDIA L4 datasheet: 300 GB/s, BF16 121 TFLOPS (242 with sparsity)"),
    "L40S": (864e9, 362.05e12, "NVIDIA L40S datasheet: 864 GB/s, BF16 362.05 TFLOPS (733 with sparsity)"),
    "RTX-4090": (1008e9, 165.2e12, "NVIDIA Ada whitepaper: 1,008 GB/s, BF16 (FP32 accumulate) 165.2 TFLOPS"),
    "H100-80GB": (3.35e12, 989.4e12, "NVIDIA H100 datasheet (SXM): 3.35 TB/s, BF16 1,979 TFLOPS with sparsity"),
    "H100-NVL": (3.9e12, 835.5e12, "NVIDIA H100 datasheet (NVL): 3.9 TB/s, BF16 1,671 TFLOPS with sparsity"),
    "H200": (4.8e12, 989.4e12, "NVIDIA H200 datasheet (SXM): 4.8 TB/s, BF16 1,979 TFLOPS with sparsity"),
    "B200": (8e12, 2.25e15, "NVIDIA HGX B200 specifications: 8 TB/s, BF16 4.5 PFLOPS with sparsity per GPU"),
    "MI300X": (5.3e12, 1307.4e12, "AMD Instinct MI300X datasheet: 5.3 TB/s, BF16 1,307.4 TFLOPS dense"),
}


def perf_of(name: str | None) -> tuple[float, float, str] | None:
    """A built-in preset's roofline columns (bandwidth, dense peak, datasheet), or None."""
    return next((g.perf for g in GPU_TABLE if g.name == name), None)


def with_perf() -> list[str]:
    """The presets the roofline knows."""
    return [g.name for g in GPU_TABLE if g.perf is not None]


#: the built-in presets, by vendor and generation
GPU_TABLE: tuple[GPUModel, ...] = (
    _gpu("T4", 16, 15360, _MODAL, (7, 5)),
    _gpu("V100-16GB", 16, cap=(7, 0)),
    _gpu("V100-32GB", 32, cap=(7, 0)),
    _gpu("A10", 24, 23028, _MODAL, (8, 6)),
    _gpu("A10G", 24, cap=(8, 6)),
    _gpu("A40", 48, cap=(8, 6)),
    _gpu("RTX-3060-12GB", 12, cap=(8, 6)),
    _gpu("RTX-3090", 24, cap=(8, 6)),
    _gpu("RTX-A6000", 48, cap=(8, 6)),
    _gpu("A100-40GB", 40, 40960, _MODAL, (8, 0)),
    _gpu("A100-80GB", 80, 81920, _MODAL, (8, 0)),
    _gpu("L4", 24, 23034, _MODAL, (8, 9)),
    _gpu("L40", 48, cap=(8, 9)),
    _gpu("L40S", 48, 46068, _MODAL, (8, 9)),
    _gpu("RTX-4060-Ti-16GB", 16, cap=(8, 9)),
    _gpu("RTX-4070-12GB", 12, cap=(8, 9)),
    _gpu("RTX-4070-Ti-16GB", 16, cap=(8, 9)),
    _gpu("RTX-4080", 16, cap=(8, 9)),
    _gpu("RTX-4090", 24, 24564, _VLLM_4090, (8, 9)),
    _gpu("RTX-6000-ADA", 48, cap=(8, 9)),
    _gpu("H100-80GB", 80, 81559, _MODAL, (9, 0)),
    _gpu("H100-NVL", 94, cap=(9, 0)),
    _gpu("H200", 141, 143771, _MODAL, (9, 0)),
    _gpu("GH200", 96, cap=(9, 0)),
    _gpu("B200", 180, cap=(10, 0)),
    _gpu("B300", 288, cap=(10, 3)),
    _gpu("RTX-5090", 32, cap=(12, 0)),
    _gpu("RTX-PRO-6000", 96, cap=(12, 0)),
    _gpu("MI210", 64),
    _gpu("MI250X", 128),
    _gpu("MI300X", 192),
    _gpu("MI325X", 256),
    _gpu("MI355X", 288),
)
MAX_GPUS = 64


def _key(name: str) -> str:
    """Names compare without case, spaces, dashes or underscores: RTX4090 = rtx-4090 = RTX_4090."""
    return re.sub(r"[\s_-]+", "", name).upper()


@dataclass(frozen=True)
class Hardware:
    """The GPUs a plan runs on: one memory figure per GPU, a label, and the preset when one was named."""

    memory_bytes: tuple[int, ...]
    label: str
    model: GPUModel | None = None

    @property
    def count(self) -> int:
        return len(self.memory_bytes)

    @property
    def family(self) -> str:
        return self.model.family if self.model else "other"


def gpu_table(extra: dict[str, int] | None = None) -> dict[str, GPUModel]:
    table = {_key(g.name): g for g in GPU_TABLE}
    for name, memory in (extra or {}).items():
        table[_key(name)] = GPUModel(name, memory, "--gpus-file")
    return table


def parse_gpus(spec: str, extra: dict[str, int] | None = None) -> Hardware:
    """``H100-80GB``, ``H100-80GBx4``, ``4xH100-80GB`` or ``4×H100`` → one memory figure per GPU and a label.
    Raises ValueError naming the closest presets."""
    text = spec.strip()
    if not text:
        raise ValueError("empty; give a GPU preset such as RTX-4090 or H100-80GBx4 (`kvplan gpus` lists them)")
    table = gpu_table(extra)
    count, name = 1, text
    if _key(text) not in table:
        m = re.fullmatch(r"(\d+)\s*[xX×*]\s*(.+)", text) or re.fullmatch(r"(.+?)\s*[xX×*]\s*(\d+)", text)
        if m:
            first, second = m.groups()
            count_text, name = (first, second) if first.isdigit() else (second, first)
            count = int(count_text)
    gpu = table.get(_key(name))
    if gpu is None:
        close = difflib.get_close_matches(_key(name), list(table), n=3, cutoff=0.6)
        names = [table[c].name for c in close]
        hint = f"; did you mean {', '.join(names)}?" if names else ""
        raise ValueError(f"unknown GPU {name!r}{hint} (`kvplan gpus` lists the presets; or give --memory 24GiB)")
    if not 1 <= count <= MAX_GPUS:
        raise ValueError(f"GPU count {count} is outside 1..{MAX_GPUS}")
    label = f"{count} × {gpu.name}" if count > 1 else gpu.name
    return Hardware((gpu.memory_bytes,) * count, label, gpu)


def parse_memory(sizes: tuple[int, ...]) -> Hardware:
    """GPUs given by their memory: ``24.00 GiB + 24.00 GiB``."""
    if not 1 <= len(sizes) <= MAX_GPUS:
        raise ValueError(f"{len(sizes)} GPUs is outside 1..{MAX_GPUS}")
    return Hardware(sizes, " + ".join(format_size(m) for m in sizes))


def parse_gpu_table(data: object) -> dict[str, int]:
    """A mapping ``NAME: memory`` (``24GiB``, ``81559MiB``) that extends the built-in table; a number without a
    unit is refused as on the command line (nvidia-smi's 24564 is MiB, a GiB figure would be 24 TiB)."""
    if not isinstance(data, dict):
        raise ValueError("expected a mapping NAME: memory (e.g. MY-GPU: 24GiB)")
    out = {}
    for name, value in data.items():
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"{name!r}: GPU names must be text")
        try:
            out[name] = parse_size(value)
        except ValueError as exc:
            raise ValueError(f"{name}: {exc}") from None
    return out
