"""kvplan against numbers recorded from real llama.cpp (tests/fixtures/oracle, scripts/record_oracle.py).

For every architecture llama.cpp ships a test model for, and for realistic metadata-only GGUFs, across
a grid of context settings: the total must equal llama_get_memory_breakdown()'s ``context`` bytes,
and every configuration llama.cpp refuses must be refused by kvplan for the same reason.
"""

from __future__ import annotations

import re
from collections import defaultdict
from functools import cache

import pytest
from graph_cases import settings_of
from helpers import ORACLE, oracle_cases

from kvplan.errors import HParamsError, KvplanError, RefusedConfigError
from kvplan.model import ModelDescription
from kvplan.runtimes.llamacpp import plan
from kvplan.sources.gguf_source import load_gguf_model

# llama.cpp's refusal message → the same reason in kvplan's message
REASONS = [
    (r"quantized V cache requires flash_attn", r"quantized V cache .* requires flash attention"),
    (r"does not divide n_embd_head", r"does not divide the (K|V) head size"),
    (r"does not support different K", r"does not support different K"),
    (r"n_outputs_max <= cparams.n_outputs_max", r"smaller than the \d+ parallel sequences"),
    (r"n_seq_max must be", r"n_seq_max must be"),
    (r"ggml_can_repeat", r"without --kv-unified needs n_ubatch"),
    (
        r"context type MTP requested but model doesn't contain MTP layers|ctx failed",
        r"MTP draft context needs nextn/MTP layers",
    ),
]


def _by_file() -> dict[str, list[dict]]:
    groups: dict[str, list[dict]] = defaultdict(list)
    for case in oracle_cases()["cases"]:
        groups[case["gguf"]].append(case)
    return dict(groups)


@cache
def _model(rel: str) -> ModelDescription | KvplanError:
    try:
        return load_gguf_model(str(ORACLE / rel))
    except KvplanError as exc:
        return exc


# llama.cpp's tiny MiniMax-01 (2 heads of 128, 256 wide) survives the graph abort that real-size MiniMax-01
# models hit when n_ubatch is not a multiple of the sequences without --kv-unified (recorded on
# real/minimax-m1.gguf); kvplan refuses there, as llama.cpp does for every real-size model.
TINY_SURVIVES_ABORT = {"tiny/minimax-01-moe.gguf"}


def _check(case: dict, model: ModelDescription) -> str | None:
    """None when kvplan agrees with llama.cpp on this case, else a description of the difference."""
    try:
        result = plan(model, settings_of(case["params"]))
    except RefusedConfigError as exc:
        if "error" not in case and case["gguf"] in TINY_SURVIVES_ABORT and "needs n_ubatch" in str(exc):
            return None
        if "error" not in case:
            return f"{case['id']}: kvplan refused ({exc}), llama.cpp allocated {case['context_bytes']}"
        for theirs, ours in REASONS:
            if re.search(theirs, case["error"]):
                if re.search(ours, str(exc)):
                    return None
                return f"{case['id']}: refusal reasons differ: llama.cpp {case['error']!r}, kvplan {exc}"
        return f"{case['id']}: llama.cpp refused for an unmapped reason {case['error']!r}; kvplan: {exc}"
    if "error" in case:
        return f"{case['id']}: llama.cpp refused ({case['error']}), kvplan answered {result.total_bytes}"
    got = (result.total_bytes, result.context.n_ctx, result.context.n_ctx_seq)
    want = (case["context_bytes"], case["n_ctx"], case["n_ctx_seq"])
    if got != want:
        return f"{case['id']} {case['params']}: (bytes, n_ctx, n_ctx_seq) kvplan {got} != llama.cpp {want}"
    return None


GROUPS = _by_file()


@pytest.mark.parametrize("rel", sorted(GROUPS))
def test_matches_llama_cpp(rel: str) -> None:
    model = _model(rel)
    cases = GROUPS[rel]
    if isinstance(model, KvplanError):
        # kvplan cannot read the model: llama.cpp must have failed to load it too
        assert isinstance(model, HParamsError), model
        assert all("error" in c for c in cases), f"{rel}: kvplan: {model}; llama.cpp loaded it"
        return
    problems = [p for c in cases if (p := _check(c, model))]
    assert not problems, f"{len(problems)}/{len(cases)} cases differ:\n" + "\n".join(problems[:15])


def test_fixture_covers_every_attention_family() -> None:
    files = set(GROUPS)
    assert len([f for f in files if f.startswith("tiny/")]) >= 120
    assert {
        "real/llama-3.1-8b.gguf",
        "real/gemma-3-27b.gguf",
        "real/deepseek-v3.gguf",
        "real/gpt-oss-20b.gguf",
    } <= files
    answered = [c for c in oracle_cases()["cases"] if "context_bytes" in c]
    refused = [c for c in oracle_cases()["cases"] if "error" in c]
    assert len(answered) > 3000 and len(refused) > 300
