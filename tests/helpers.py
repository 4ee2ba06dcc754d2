"""What tests share: fixture paths, the oracle cases, and the command line run in-process."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from kvplan.cli import run

if TYPE_CHECKING:
    from kvplan.analysis.explain_vllm import GpuFacts

TESTS = Path(__file__).parent
FIXTURES = TESTS / "fixtures"
ORACLE = FIXTURES / "oracle"
GOLDEN = TESTS / "golden"
ROOT = TESTS.parent
EXAMPLES = ROOT / "examples"
GIB = 1 << 30
MIB = 1 << 20


@cache
def oracle_cases() -> dict:
    return json.loads((ORACLE / "cases.json").read_text())


@dataclass(frozen=True)
class Result:
    exit_code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def json(self) -> dict:
        return json.loads(self.stdout)


def kv(*args: str, width: int | None = None) -> Result:
    """Run ``kvplan ARGS`` in-process, as a pipe would (no width limit) unless ``width`` is given."""
    out, err = io.StringIO(), io.StringIO()
    code = run(list(args), out, err, width)
    return Result(code, out.getvalue(), err.getvalue())


def gpu_facts(name: str) -> GpuFacts:
    """A GPU preset as an engine log's explanation takes it (vLLM's and SGLang's logs do not name their GPU)."""
    from kvplan.analysis.explain_vllm import GpuFacts
    from kvplan.capacity.hardware import parse_gpus

    g = parse_gpus(name).model
    assert g is not None
    return GpuFacts(g.name, g.memory_bytes, g.capability)
