"""The library API: the commands as functions returning the reports the CLI renders, and the planner."""

from __future__ import annotations

import doctest
import json
import subprocess
import sys

import pytest
from helpers import ROOT, kv

import kvplan
from kvplan import api
from kvplan.errors import UsageError


def test_every_name_is_exported_and_documented() -> None:
    assert set(kvplan.__all__) - {"__version__"} == set(api.__all__)
    for name in api.__all__:
        assert getattr(kvplan, name) is getattr(api, name)
        obj = getattr(api, name)
        assert obj.__doc__, name


def test_the_library_and_the_command_line_give_the_same_json() -> None:
    doc = kvplan.fit("llama-3.1-8b", gpu="RTX-4090", ctx_size=32768, parallel=2, cache_type_k="q8_0")
    cli = kv("fit", "llama-3.1-8b", "--gpu", "RTX-4090", "-c", "32768", "-np", "2", "-ctk", "q8_0", "-o", "json")
    assert doc.to_dict() == json.loads(cli.stdout)
    m = kvplan.load_model("llama-3.1-8b")
    assert kvplan.estimate(m, ctx_size=4096).to_dict() == kvplan.estimate("llama-3.1-8b", ctx_size=4096).to_dict()


def test_errors_name_the_keyword() -> None:
    with pytest.raises(UsageError, match="cache_type_k: unknown cache type 'q8'"):
        kvplan.estimate("llama-3.1-8b", cache_type_k="q8")
    with pytest.raises(UsageError, match="ctx: not a setting of estimate"):
        kvplan.estimate("llama-3.1-8b", ctx=4096)
    with pytest.raises(UsageError, match="units"):
        kvplan.estimate("llama-3.1-8b", units="furlongs")


def test_plan_and_planner_hand_checked() -> None:
    """32 layers x 8 KV heads x 128 x f16 (K and V) = 128 KiB per token: 512 MiB at 4,096 tokens."""
    m = kvplan.load_model("llama-3.1-8b")
    p = kvplan.planner(m)
    assert [p(n_ctx=c).total_bytes for c in (4096, 8192)] == [536870912, 1073741824]
    assert kvplan.plan(m, kvplan.LlamaCppSettings(n_ctx=4096, type_k="q8_0", type_v="q8_0")).total_bytes == 285212672


def test_the_docstring_examples_run() -> None:
    result = doctest.testmod(api, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 4 and result.failed == 0


def test_importing_kvplan_loads_nothing() -> None:
    code = "import sys, kvplan; print(sorted(m for m in sys.modules if m.startswith('kvplan')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.strip() == "['kvplan']"


def test_the_library_pays_for_no_command_line() -> None:
    """`import kvplan; kvplan.estimate(...)`, `fit` and `simulate` in a fresh process: nothing of kvplan.cli, Typer,
    Click or Rich is imported, and nothing is printed."""
    code = (
        "import sys, kvplan\n"
        "kvplan.estimate('llama-3.1-8b', ctx_size=4096)\n"
        "kvplan.fit('llama-3.1-8b', gpu='RTX-4090', ctx_size=8192)\n"
        "kvplan.simulate('llama-3.1-8b', gpu='H100-80GB', engine='vllm', request_rate=2, duration=5)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('typer', 'click', 'rich', 'pydantic')\n"
        "             or m.startswith('kvplan.cli')))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert r.stdout == "[]\n" and r.stderr == ""


def test_the_library_takes_no_file_writing_keywords() -> None:
    with pytest.raises(UsageError, match="svg: not a setting of curve"):
        kvplan.curve("llama-3.1-8b", svg="x.svg")
    with pytest.raises(UsageError, match="format: not a setting of estimate"):
        kvplan.estimate("llama-3.1-8b", format="json")
