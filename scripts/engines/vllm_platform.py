"""Make vLLM 0.33.0 believe it runs on a chosen CUDA GPU, on a host without a GPU driver.

After ../shared/oracle/vllm/fakeplat.py (which was made to work there; see its notes). Only device *queries* are
answered; nothing runs on a GPU, and no stub is on the KV-sizing path:
  * FakeCuda(CudaPlatform): name, total memory, compute capability, SM count, device count from ``configure``;
    ``current_device`` is the meta device (the model is built there).
  * vllm._C_stable_libtorch, vllm.vllm_flash_attn (need libcuda.so.1): FA2 and FA3 reported present, as the
    x86_64 CUDA wheel ships them; FlashMLA reported available (the wheel ships _flashmla_C).
  * four import-time cutlass capability probes; FlashInfer's all-reduce-fusion size table (torch.compile only).
  * torch.ops._C / _moe_C lookups that layer constructors make but never call: a stub op.
  * torch.cuda.Stream / Event: dummies (constructors create them; nothing waits on them); torch.cuda's device
    properties, capability and name answered from ``configure`` (FlashInfer's constructors ask torch directly).
Two import-time workarounds: vllm.v1.worker.utils imported while the device says sm80 (a Triton autotune filter
trips on the no-driver placeholder), cutlass_mla imported with torch.empty on the meta device.
"""

from __future__ import annotations

import sys
import types
from typing import Any

GPU: dict[str, Any] = {"name": "NVIDIA H100 80GB HBM3", "mem": 81559 * 2**20, "cap": (9, 0), "sms": 132}


def _unavailable(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("kernel stub: no GPU on this host")


class _StubOp:
    """A custom op a constructor looks up (``torch.ops._C.silu_and_mul``, ``.default``) but never calls here."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("stub op: no GPU on this host")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return self


class _Dummy:
    """torch.cuda.Stream / Event: constructors create them; nothing waits on them here."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda *a, **k: None


_STUB_NAMESPACES = frozenset(
    "_C _moe_C _C_cache_ops _C_custom_ar _rocm_C _vllm_fa2_C _vllm_fa3_C _flashmla_C _flashmla_extension_C".split()
)


def configure(gpu: dict[str, Any]) -> None:  # noqa: C901 - one stub after another
    """Install the fake platform for ``gpu`` (name, mem, cap, sms) and the import workarounds."""
    GPU.update(gpu)
    GPU["cap"] = tuple(GPU["cap"])
    sys.modules.setdefault("vllm._C_stable_libtorch", types.ModuleType("vllm._C_stable_libtorch"))
    fa = types.ModuleType("vllm.vllm_flash_attn")
    fa.__path__ = []  # type: ignore[attr-defined]
    fai = types.ModuleType("vllm.vllm_flash_attn.flash_attn_interface")
    for m in (fa, fai):
        m.FA2_AVAILABLE = True  # type: ignore[attr-defined]
        m.FA3_AVAILABLE = True  # type: ignore[attr-defined]
        m.is_fa_version_supported = lambda v, device=None: v in (2, 3)  # type: ignore[attr-defined]
        m.fa_version_unsupported_reason = lambda v, device=None: None if v in (2, 3) else "stub: FA4 not built"  # type: ignore[attr-defined]
        m.flash_attn_varlen_func = _unavailable  # type: ignore[attr-defined]
        m.get_scheduler_metadata = _unavailable  # type: ignore[attr-defined]
        m.compile_flash_attn_varlen_func_from_specs = None  # type: ignore[attr-defined]
    sys.modules["vllm.vllm_flash_attn"] = fa
    sys.modules["vllm.vllm_flash_attn.flash_attn_interface"] = fai

    import torch
    import torch._ops as tops
    import vllm.platforms as platforms
    from vllm.platforms.cuda import CudaPlatform
    from vllm.platforms.interface import DeviceCapability

    class FakeCuda(CudaPlatform):
        @classmethod
        def get_device_capability(cls, device_id: int = 0) -> DeviceCapability:
            return DeviceCapability(*GPU["cap"])

        @classmethod
        def get_device_name(cls, device_id: int = 0) -> str:
            return str(GPU["name"])

        @classmethod
        def get_device_total_memory(cls, device_id: int = 0) -> int:
            return int(GPU["mem"])

        @classmethod
        def is_fully_connected(cls, ids: Any) -> bool:
            return True

        @classmethod
        def device_count(cls) -> int:
            return 64  # room for tp × pp up to 64 (a multi-node deployment as vLLM sees it)

        @classmethod
        def get_device_uuid(cls, device_id: int = 0) -> str:
            return "GPU-fake"

        @classmethod
        def num_compute_units(cls, device_id: int = 0) -> int:
            return int(GPU.get("sms", 132))

        @classmethod
        def current_device(cls) -> Any:
            return torch.device("meta")

    platforms._current_platform = FakeCuda()

    import vllm._custom_ops as ops

    ops.cutlass_scaled_mm_supports_block_fp8 = lambda cap: True
    ops.cutlass_scaled_mm_supports_fp8 = lambda cap: True
    ops.cutlass_scaled_mm_supports_fp4 = lambda cap: False
    ops.cutlass_group_gemm_supported = lambda cap: True
    import vllm.v1.attention.ops.flashmla as fmla

    fmla._flashmla_C_AVAILABLE = True
    fmla._flashmla_extension_C_AVAILABLE = True
    from vllm.config.compilation import PassConfig

    PassConfig.default_fi_allreduce_fusion_max_size_mb = staticmethod(dict)

    original_getattr = tops._OpNamespace.__getattr__
    stub = _StubOp()

    def op_getattr(self: Any, name: str) -> Any:
        try:
            return original_getattr(self, name)
        except AttributeError:
            if self.name in _STUB_NAMESPACES and not name.startswith("__"):
                return stub
            raise

    tops._OpNamespace.__getattr__ = op_getattr  # type: ignore[method-assign]
    # kernels' constructors (FlashInfer's) ask torch for the device's properties
    props = types.SimpleNamespace(
        name=GPU["name"], total_memory=int(GPU["mem"]), major=GPU["cap"][0], minor=GPU["cap"][1],
        multi_processor_count=int(GPU.get("sms", 132)), L2_cache_size=50 * 2**20,
    )  # fmt: skip
    torch.cuda.get_device_properties = lambda device=None: props  # type: ignore[assignment]
    torch.cuda.get_device_capability = lambda device=None: tuple(GPU["cap"])  # type: ignore[assignment]
    torch.cuda.get_device_name = lambda device=None: str(GPU["name"])  # type: ignore[assignment]
    from torch.overrides import TorchFunctionMode

    def to_meta(value: Any) -> Any:
        if isinstance(value, torch.device) and value.type == "cuda":
            return torch.device("meta")
        if isinstance(value, str) and (value == "cuda" or value.startswith("cuda:")):
            return "meta"
        return value

    class CudaToMeta(TorchFunctionMode):
        """Buffers a constructor places on the GPU explicitly (``device="cuda"``) go to the meta device."""

        def __torch_function__(self, func: Any, types_: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = {k: to_meta(v) for k, v in (kwargs or {}).items()}
            return func(*(to_meta(a) for a in args), **kwargs)

    CudaToMeta().__enter__()
    torch.cuda.Stream = _Dummy  # type: ignore[assignment,misc]
    torch.cuda.Event = _Dummy  # type: ignore[assignment,misc]

    cap = GPU["cap"]
    GPU["cap"] = (8, 0)
    import vllm.v1.worker.utils

    GPU["cap"] = cap
    empty = torch.empty

    def meta_empty(*args: Any, **kwargs: Any) -> Any:
        kwargs["device"] = "meta"
        return empty(*args, **kwargs)

    torch.empty = meta_empty  # type: ignore[assignment]
    import vllm.v1.attention.backends.mla.cutlass_mla  # noqa: F401

    torch.empty = empty  # type: ignore[assignment]
