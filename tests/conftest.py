"""Test isolation: no colour, a fixed width, no proxy or token from the environment, and the helpers on the path;
the fast lane (``-m "not slow"``): every test, and one recorded case in SAMPLE of every oracle."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    for name in (
        "HF_TOKEN",
        "HF_ENDPOINT",
        "HF_HUB_OFFLINE",
        "KVPLAN_DEBUG",
        "http_proxy",
        "https_proxy",
        "HTTP_PROXY",
        "HTTPS_PROXY",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))


#: the recorded oracles: their cases beyond one in SAMPLE run only in the full suite (CI runs it)
ORACLES = frozenset(
    {
        "test_oracle.py",
        "test_fit_oracle.py",
        "test_vllm_oracle.py",
        "test_sglang_oracle.py",
        "test_hf_conversion.py",
        "test_vllm_scheduler.py",
        "test_compute_graph.py",
        "test_cuda_recorded.py",
        "test_cuda_graph_recorded.py",
        "test_sched.py",
        "test_vllm_context.py",
        "test_explain_vllm.py",
        "test_explain_sglang.py",
    }
)
SAMPLE = 20


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    seen: Counter[tuple[str, str]] = Counter()
    for item in items:
        if item.path.name in ORACLES and hasattr(item, "callspec"):
            key = (str(item.path), getattr(item, "originalname", item.name))
            if seen[key] % SAMPLE:
                item.add_marker(pytest.mark.slow)
            seen[key] += 1
