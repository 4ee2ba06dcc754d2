"""Make torch report one CUDA device without a driver (device queries only), for SGLang 0.5.23's sizing code.

After ../shared/oracle/sglang/fakecuda.py (made to work there): torch.cuda answers name, memory, capability and
SM count for the GPU ``configure`` is given; kernel packages SGLang imports on a CUDA host but that are not
installed here (sgl_kernel, deep_gemm, flash_attn, cuda.*, ...) become empty modules. None is on the sizing path.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys as _sys
import types
from typing import Any

import torch

GPU: dict[str, Any] = {"name": "NVIDIA H100 80GB HBM3", "mem": 81559 * 2**20, "cap": (9, 0), "sms": 132}


def cuda_build() -> None:
    """With a CPU build of torch, SGLang's is_cuda() (torch.version.cuda too) is False and its GPU-memory heuristics
    (mem_fraction_static) see no GPU: the sizing recorder claims a CUDA build. Not the scheduler recorder: its
    pinned-memory paths would then ask for a CUDA allocator."""
    if torch.version.cuda is None:
        torch.version.cuda = "12.8"


def configure(gpu: dict[str, Any]) -> None:
    GPU.update(gpu)
    GPU["cap"] = tuple(GPU["cap"])
    props = types.SimpleNamespace(name=GPU["name"], total_memory=GPU["mem"], major=GPU["cap"][0],
                                  minor=GPU["cap"][1], multi_processor_count=GPU.get("sms", 132), gcnArchName="",
                                  L2_cache_size=50 * 2**20, uuid="fake")  # fmt: skip
    torch.cuda.is_available = lambda: True
    torch.cuda.device_count = lambda: 1
    torch.cuda.get_device_name = lambda d=None: GPU["name"]
    torch.cuda.get_device_capability = lambda d=None: GPU["cap"]
    torch.cuda.get_device_properties = lambda d=None: props
    torch.cuda.current_device = lambda: 0
    torch.cuda.set_device = lambda d: None
    torch.cuda.mem_get_info = lambda d=None: (GPU["mem"], GPU["mem"])
    torch.cuda.is_initialized = lambda: True
    torch.cuda._lazy_init = lambda: None


# Stub packages SGLang imports on a CUDA host but that are not installed here (kernels; never called for sizing).
STUB_PREFIXES = (
    "sgl_kernel",
    "deep_gemm",
    "sgl_flash_mla",
    "flash_mla",
    "deep_ep",
    "sgl_deep_ep",
    "quack",
    "humming",
    "tilelang",
    "nvshmem",
    "cuda",
    "torch_memory_saver",
    "flash_attn",
)


class _Anything:
    def __init__(self, *a, **k):
        pass

    def __call__(self, *a, **k):
        return _Anything()

    def __getattr__(self, n):
        return _Anything()

    def __bool__(self):
        return False

    def __getitem__(self, k):
        return _Anything()

    def __iter__(self):
        return iter(())

    def __mro_entries__(self, bases):
        return (object,)


class _StubModule(type(_sys)):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Anything()


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path, target=None):
        if fullname.split(".")[0] in STUB_PREFIXES:
            for f in _sys.meta_path:
                if f is self:
                    continue
                try:
                    s = f.find_spec(fullname, path, target)
                except Exception:
                    s = None
                if s is not None:
                    return None
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        m = _StubModule(spec.name)
        m.__path__ = []
        STUBBED.append(spec.name)
        return m

    def exec_module(self, module):
        pass


STUBBED = []
_sys.meta_path.insert(0, _StubFinder())
