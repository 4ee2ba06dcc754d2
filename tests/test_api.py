"""The library API: the commands as functions returning the reports the CLI renders, and the planner."""

from __future__ import annotations

import contextlib
import doctest
import json
import subprocess
import sys
from dataclasses import fields as _fields

import pytest
from helpers import ROOT, kv
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kvplan
from kvplan import api
from kvplan.errors import KvplanError, UsageError
from kvplan.options.commands import COMMANDS


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


# ---- issue 26, item 6: every bad argument is one of kvplan's errors, never AttributeError / TypeError


HOSTILE_VALUES = st.one_of(
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.text(max_size=30),
    st.binary(max_size=10),
    st.lists(st.integers(0, 3), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.sampled_from([object(), 1j, "\ud800", "1e400", "nan", "-1", "99999999999999999999999"]),
)

_MODEL = None


def _model() -> api.ModelDescription:
    global _MODEL
    if _MODEL is None:
        _MODEL = kvplan.load_model("llama-3.1-8b")
    return _MODEL


@pytest.mark.parametrize(
    ("call", "kind"),
    [
        (lambda: kvplan.estimate(123), "model"),
        (lambda: kvplan.estimate(None), "model"),
        (lambda: kvplan.estimate(b"x.gguf"), "model"),
        (lambda: kvplan.load_model(1), "model"),
        (lambda: kvplan.load_model("llama-3.1-8b", params=float("nan")), "params"),
        (lambda: kvplan.check(1), "path"),
        (lambda: kvplan.explain(1), "log"),
        (lambda: kvplan.plan("llama-3.1-8b", n_ctx=4096), "model"),
        (lambda: kvplan.plan(_model(), 1), "settings"),
        (lambda: kvplan.plan(_model(), n_ctx=float("nan")), "n_ctx"),
        (lambda: kvplan.plan(_model(), n_ctx="4096"), "n_ctx"),
        (lambda: kvplan.plan(_model(), kv_unified=1), "kv_unified"),
        (lambda: kvplan.plan(_model(), type_k=1), "type_k"),
        (lambda: kvplan.plan(_model(), flash_attn="yes"), "flash_attn"),
        (lambda: kvplan.plan(_model(), bogus=1), "bogus"),
        (lambda: kvplan.planner(1)(n_ctx=5), "model"),
    ],
)
def test_bad_arguments_found_by_the_probes(call, kind: str) -> None:
    with pytest.raises(UsageError) as err:
        call()
    assert err.value.param == kind


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(["estimate", "fit", "compare"]),
    st.data(),
)
def test_any_value_for_any_keyword_is_an_answer_or_kvplans_error(command: str, data: st.DataObject) -> None:
    keys = sorted(set(COMMANDS[command].library_keywords) - {"trace", "contexts"})
    chosen = data.draw(st.dictionaries(st.sampled_from(keys), HOSTILE_VALUES, max_size=3))
    base = {"gpu": "RTX-4090"} if command == "fit" and "gpu" not in chosen and "memory" not in chosen else {}
    with contextlib.suppress(KvplanError):
        getattr(kvplan, command)(_model(), **base, **chosen)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from([f.name for f in _fields(api.LlamaCppSettings)]), HOSTILE_VALUES, max_size=3))
def test_any_plan_field_is_a_plan_or_kvplans_error(chosen: dict[str, object]) -> None:
    with contextlib.suppress(KvplanError):
        kvplan.plan(_model(), **chosen)
