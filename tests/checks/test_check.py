"""`kvplan check`: budgets from a file, exit codes, verified suggestions, JUnit / JSON / Markdown / CSV reports."""

from __future__ import annotations

import csv
import dataclasses
import io
import os
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from helpers import EXAMPLES, GOLDEN, kv

from kvplan.checks.deployments import load_deployments
from kvplan.checks.evaluate import evaluate
from kvplan.errors import SpecError


def _copy_examples(tmp_path: Path) -> Path:
    shutil.copy(EXAMPLES / "deployments.yaml", tmp_path / "deployments.yaml")
    shutil.copy(EXAMPLES / "my-model.yaml", tmp_path / "my-model.yaml")
    return tmp_path / "deployments.yaml"


def _dep(path: Path, name: str):
    return next(d for d in load_deployments(str(path)) if d.name == name)


def test_example_passes_and_one_edit_fails(tmp_path: Path) -> None:
    r = kv("check", str(EXAMPLES / "deployments.yaml"))
    assert r.exit_code == 0, r.output
    f = _copy_examples(tmp_path)
    f.write_text(f.read_text().replace("max_kv: 9GiB", "max_kv: 8GiB"))
    r = kv("check", str(f))
    assert r.exit_code == 1
    # 32 layers × 2 × 1088 B (q8_0 rows of 1024) × 131072 cells = 8.50 GiB, over 8 GiB by 512 MiB
    assert "chat-8b-llamacpp" in r.stdout and "over by 512.00 MiB (6.2%)" in r.stdout
    assert "chat-8b-llamacpp: passes with -ctk q8_0 -ctv q5_1" in r.stdout


def test_suggestion_really_passes(tmp_path: Path) -> None:
    f = _copy_examples(tmp_path)
    f.write_text(f.read_text().replace("max_kv: 9GiB", "max_kv: 8GiB"))
    dep = _dep(f, "chat-8b-llamacpp")
    result = evaluate(dep)
    assert result.status == "fail" and result.evaluation.suggestion.flags == ("-ctk", "q8_0", "-ctv", "q5_1")
    o = dep.request.llamacpp
    fixed = dataclasses.replace(
        dep,
        request=dataclasses.replace(
            dep.request, llamacpp=dataclasses.replace(o, cache_type_k="q8_0", cache_type_v="q5_1")
        ),
    )
    assert evaluate(fixed).status == "pass"
    # a context suggestion is re-checked the same way: no cache type brings custom-spec under 0.5 GiB
    f.write_text(f.read_text().replace("max_kv: 2GiB", "max_kv: 512MiB"))
    dep = _dep(f, "custom-spec")
    result = evaluate(dep)
    flags = result.evaluation.suggestion.flags
    assert result.status == "fail" and flags[0] == "-c" and flags[2:] == ("-np", "2")
    per_seq = int(flags[1]) // 2
    fixed = dataclasses.replace(
        dep,
        request=dataclasses.replace(
            dep.request, llamacpp=dataclasses.replace(dep.request.llamacpp, ctx_per_seq=per_seq)
        ),
    )
    assert evaluate(fixed).status == "pass"
    bigger = dataclasses.replace(
        dep,
        request=dataclasses.replace(
            dep.request, llamacpp=dataclasses.replace(dep.request.llamacpp, ctx_per_seq=per_seq + 256)
        ),
    )
    assert evaluate(bigger).status == "fail"


def test_reports_are_deterministic_and_well_formed(tmp_path: Path) -> None:
    f = _copy_examples(tmp_path)
    junit = tmp_path / "j.xml"
    a = kv("check", str(f), "-o", "json", "--junit", str(junit))
    b = kv("check", str(f), "-o", "json")
    assert a.stdout == b.stdout
    doc = a.json()
    assert doc["schema_version"] == 2 and doc["exit_code"] == 0 and len(doc["deployments"]) == 6
    budgets = doc["deployments"][0]["budgets"]
    # every figure is a number: bytes as integers, never "8.50 GiB"
    assert budgets[1] == {
        "budget": "max_kv",
        "passed": True,
        "actual": 32 * 2 * 1088 * 131072,
        "limit": 9 * (1 << 30),
        "unit": "bytes",
        "device": None,
        "capped_by_trained": False,
    }
    root = ET.parse(junit).getroot()
    suite = root.find("testsuite")
    assert root.tag == "testsuites" and suite is not None
    cases = suite.findall("testcase")
    assert int(suite.get("tests")) == len(cases) == 18 and suite.get("failures") == "0"
    assert all(c.get("classname") and c.get("name") for c in cases)
    md = kv("check", str(EXAMPLES / "deployments.yaml"), "-o", "markdown").stdout
    golden = GOLDEN / "check-deployments.md"
    if os.environ.get("KVPLAN_UPDATE_GOLDEN"):
        golden.write_text(md)
    assert md == golden.read_text()
    rows = list(csv.DictReader(io.StringIO(kv("check", str(f), "-o", "csv").stdout)))
    assert rows[1]["budget"] == "max_kv" and rows[1]["actual"] == str(32 * 2 * 1088 * 131072)


def test_failures_in_junit(tmp_path: Path) -> None:
    f = _copy_examples(tmp_path)
    f.write_text(f.read_text().replace("max_kv: 9GiB", "max_kv: 8GiB"))
    junit = tmp_path / "j.xml"
    kv("check", str(f), "--junit", str(junit))
    suite = ET.parse(junit).getroot().find("testsuite")
    failed = [c for c in suite.findall("testcase") if c.find("failure") is not None]
    assert suite.get("failures") == "1" and failed[0].get("name") == "max_kv"
    assert "passes with" in failed[0].find("failure").text


def test_unreadable_model_fails_only_its_deployment(tmp_path: Path) -> None:
    f = _copy_examples(tmp_path)
    f.write_text(f.read_text().replace("model: my-model.yaml", "model: missing.gguf"))
    r = kv("check", str(f), "-o", "json")
    assert r.exit_code == 3
    status = {d["name"]: d["status"] for d in r.json()["deployments"]}
    assert status == {
        "chat-8b-llamacpp": "pass",
        "gemma-27b-two-gpus": "pass",
        "custom-spec": "error",
        "llama-70b-vllm-tp4": "pass",
        "gpt-oss-120b-vllm": "pass",
        "chat-8b-vllm-traffic": "pass",
    }
    assert "custom-spec" in r.stderr and "missing.gguf: no such file" in r.stderr


@pytest.mark.parametrize(
    ("text", "line", "key"),
    [
        ("deployments:\n  - model: llama-3.1-8b\n    ctxx: 4k\n", 3, "deployments[0].ctxx"),
        ("deployments:\n  - name: a\n", 2, "deployments[0].model"),
        ("deployments:\n  - model: llama-3.1-8b\n    budgets: {max_kv: lots}\n", 3, "deployments[0].budgets.max_kv"),
        ("deployments:\n  - model: llama-3.1-8b\n    budgets: {headroom: 5%}\n", 3, "deployments[0].budgets.headroom"),
        ("deployments:\n  - model: x\n    engine: ollama\n", 3, "deployments[0].engine"),
        ("deploy: []\n", 1, "deployments"),
        # a value the command line would refuse is refused at its line, before anything runs
        ("deployments:\n  - model: x\n    cache_type_k: q8\n", 3, "deployments[0].cache_type_k"),
        ("deployments:\n  - model: x\n    ctx: 32k\n", 3, "deployments[0].ctx"),
        ("deployments:\n  - model: x\n    gpu: RTX4090x2\n    tensor_split: [1]\n", 4, "deployments[0].tensor_split"),
        ("deployments:\n  - model: x\n    memory: 24\n", 3, "deployments[0].memory"),
        ("deployments:\n  - model: x\n    engine: vllm\n    parallel: 4\n    gpu: L4\n", 4, "deployments[0].parallel"),
        ("deployments:\n  - model: x\n    max_model_len: 4k\n", 3, "deployments[0].max_model_len"),
        ("deployments:\n  - model: x\n    engine: vllm\n", 2, "deployments[0]"),
        ("deployments:\n  - model: x\n    weight_bytes: -5GiB\n", 3, "deployments[0].weight_bytes"),
    ],
)
def test_malformed_file_names_line_and_key(tmp_path: Path, text: str, line: int, key: str) -> None:
    f = tmp_path / "d.yaml"
    f.write_text(text)
    with pytest.raises(SpecError) as info:
        load_deployments(str(f))
    assert (info.value.line, info.value.key) == (line, key)
    r = kv("check", str(f))
    assert r.exit_code == 3 and r.stderr.count("\n") == 1 and f"{f}:{line}" in r.stderr


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "the file is empty; expected a 'deployments' list"),
        (b"GGUF\x03\x00", "a GGUF model, not a deployments"),
        (b"\xff\xfe\x00", "not a UTF-8 text file"),
    ],
)
def test_files_that_are_not_deployments_files(tmp_path: Path, content: bytes, message: str) -> None:
    f = tmp_path / "d.yaml"
    f.write_bytes(content)
    r = kv("check", str(f))
    assert r.exit_code == 3 and message in r.stderr and r.stderr.count("\n") == 1, r.stderr
    r = kv("check", str(tmp_path))
    assert r.exit_code == 3 and "a folder" in r.stderr


def test_inline_budgets() -> None:
    ok = kv("estimate", "llama-3.1-8b", "-c", "32k", "--max-kv", "4GiB", "-o", "json")
    assert ok.exit_code == 0 and ok.json()["passed"]
    bad = kv("estimate", "llama-3.1-8b", "-c", "32k", "--max-kv", "3GiB", "-o", "json")
    assert bad.exit_code == 1 and "max_kv 4.00 GiB, needs ≤ 3.00 GiB" in bad.stderr
    assert bad.json()["budgets"][0]["actual"] == 4 * (1 << 30)
    r = kv("estimate", "llama-3.1-8b", "-c", "32k", "-np", "4", "--min-ctx", "16k", "-o", "csv")
    assert r.exit_code == 1 and "min_ctx 8,192 tokens" in r.stderr
    r = kv("fit", "llama-3.1-8b", "--gpu", "RTX-4090", "--params", "8B", "--min-ctx", "200k")
    assert r.exit_code == 1 and "min_ctx" in r.stderr and "trained context" in r.stdout
    r = kv("fit", "llama-3.1-8b", "--gpu", "RTX-4090", "--params", "8B", "--max-total", "10GiB")
    assert r.exit_code == 1 and "max_total" in r.stderr
    # a budget that cannot be evaluated is a usage error before anything is printed
    r = kv("estimate", "llama-3.1-8b", "--max-total", "10GiB")
    assert r.exit_code == 2 and r.stdout == "" and "needs the weights" in r.stderr
    assert kv("check", "/nonexistent/deployments.yaml").exit_code == 3
    assert kv("check", "x.yaml", "--format", "pdf").exit_code == 2


def test_unsupported_model_exits_4(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text(
        "arch: mystery\nmetadata: {context_length: 1, embedding_length: 1, block_count: 1}\n"
    )
    f = tmp_path / "d.yaml"
    f.write_text("deployments:\n  - name: x\n    model: m.yaml\n")
    r = kv("check", str(f), "-o", "json")
    assert r.exit_code == 4 and r.json()["deployments"][0]["status"] == "error"


def test_engine_deployments_use_the_engine_solver(tmp_path: Path) -> None:
    """Engine budgets go through the same layout and solver as `fit --engine`, hybrids included; suggestions are
    the solver's boundary."""
    f = tmp_path / "d.yaml"
    f.write_text(
        "deployments:\n"
        "  - name: gemma\n    model: gemma-3-27b\n    engine: vllm\n    gpu: H100-80GB\n    max_model_len: 32k\n"
        "    max_num_seqs: 2\n    max_num_batched_tokens: 4096\n"
        "    budgets: {min_parallel: 2, min_ctx: 32k, headroom: 5%}\n"
        "  - name: gemma-too-many\n    model: gemma-3-27b\n    engine: vllm\n    gpu: H100-80GB\n"
        "    max_model_len: 16k\n    budgets: {min_parallel: 64}\n    disable_hybrid_kv_cache_manager: true\n"
        "  - name: gemma-too-long\n    model: gemma-3-27b\n    engine: vllm\n    gpu: H100-80GB\n"
        "    max_model_len: 128k\n    budgets: {min_parallel: 64}\n    disable_hybrid_kv_cache_manager: true\n"
        "  - name: gemma-starts\n    model: gemma-3-27b\n    engine: vllm\n    gpu: H100-80GB\n"
        "    max_model_len: 16k\n    max_num_seqs: 64\n    disable_hybrid_kv_cache_manager: true\n"
    )
    deps = load_deployments(str(f))
    ok, many, long, starts = (evaluate(d) for d in deps)
    assert ok.status == "pass", ok.evaluation.findings
    # max_num_seqs is vLLM's scheduler cap: vLLM starts with 64 whatever fits at once (min_parallel asks that)
    assert starts.status == "pass" and 1 <= starts.evaluation.fit.detail.requests < 64
    assert (
        ok.evaluation.fit.n_seq == 2
        and ok.evaluation.fit.kv_bytes == 2 * ok.evaluation.fit.detail.capacity.request_bytes(32768)
    )
    assert many.status == "fail" and many.evaluation.suggestion.what == "ctx"

    def fits(dep, **engine: int) -> bool:
        req = dataclasses.replace(dep.request, engine=dataclasses.replace(dep.request.engine, **engine))
        return evaluate(dataclasses.replace(dep, request=req)).status == "pass"

    c = int(many.evaluation.suggestion.flags[1])
    assert fits(deps[1], max_model_len=c) and not fits(deps[1], max_model_len=c + 1)
    c = int(long.evaluation.suggestion.flags[1])
    assert fits(deps[2], max_model_len=c) and not fits(deps[2], max_model_len=c + 1)


def test_every_planned_deployment_reports_its_settings() -> None:
    """A deployment without hardware is an estimate: its context per sequence and sequences are the ones llama.cpp
    plans (16k × 2 here), not null."""
    from helpers import EXAMPLES, kv

    doc = kv("check", str(EXAMPLES / "deployments.yaml"), "-o", "json").json()
    spec = next(d for d in doc["deployments"] if d["name"] == "custom-spec")
    assert (spec["ctx_per_seq"], spec["n_seq"]) == (16384, 2)
    assert all(d["ctx_per_seq"] and d["n_seq"] for d in doc["deployments"] if d["status"] != "error")
