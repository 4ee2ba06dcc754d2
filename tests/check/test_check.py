"""`kvplan check`: budgets from a file, exit codes, verified suggestions, JUnit / JSON / Markdown reports."""

from __future__ import annotations

from helpers import kv

import json
import os
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from kvplan.check import evaluate, load_deployments
from kvplan.errors import SpecError

EXAMPLES = Path(__file__).parent.parent / "examples"
GOLDEN = Path(__file__).parent / "golden"


def _copy_examples(tmp_path: Path) -> Path:
    shutil.copy(EXAMPLES / "deployments.yaml", tmp_path / "deployments.yaml")
    shutil.copy(EXAMPLES / "my-model.yaml", tmp_path / "my-model.yaml")
    return tmp_path / "deployments.yaml"


def test_example_passes_and_one_edit_fails(tmp_path: Path) -> None:
    r = kv(*["check", str(EXAMPLES / "deployments.yaml")])
    assert r.exit_code == 0, r.output
    f = _copy_examples(tmp_path)
    f.write_text(f.read_text().replace("max_kv: 9GiB", "max_kv: 8GiB"))
    r = kv(*["check", str(f)])
    assert r.exit_code == 1
    assert "chat-8b-llamacpp" in r.stdout and "over by 512.00 MiB" in r.stdout
    assert "passes with -ctk q8_0 -ctv q5_1" in r.stdout


def test_suggestion_really_passes(tmp_path: Path) -> None:
    f = _copy_examples(tmp_path)
    f.write_text(f.read_text().replace("max_kv: 9GiB", "max_kv: 8GiB"))
    dep = next(d for d in load_deployments(str(f)) if d.name == "chat-8b-llamacpp")
    result = evaluate(dep)
    assert result.status == "fail" and result.suggestion == "passes with -ctk q8_0 -ctv q5_1"
    dep.values.update(cache_type_k="q8_0", cache_type_v="q5_1")
    assert evaluate(dep).status == "pass"
    # a context suggestion is re-checked the same way
    f.write_text(f.read_text().replace("max_kv: 2GiB", "max_kv: 1GiB"))
    dep = next(d for d in load_deployments(str(f)) if d.name == "custom-spec")
    result = evaluate(dep)
    assert result.suggestion.startswith("passes with -ctk")
    tk, tv = result.suggestion.split()[3], result.suggestion.split()[5]
    dep.values.update(cache_type_k=tk, cache_type_v=tv, flash_attn="on")
    assert evaluate(dep).status == "pass"


def test_reports_are_deterministic_and_well_formed(tmp_path: Path) -> None:
    f = _copy_examples(tmp_path)
    junit = tmp_path / "j.xml"
    a = kv(*["check", str(f), "-o", "json", "--junit", str(junit)])
    b = kv(*["check", str(f), "-o", "json"])
    assert a.stdout == b.stdout
    doc = json.loads(a.stdout)
    assert doc["schema_version"] == 1 and doc["exit_code"] == 0 and len(doc["deployments"]) == 5
    root = ET.parse(junit).getroot()
    suite = root.find("testsuite")
    assert root.tag == "testsuites" and suite is not None
    cases = suite.findall("testcase")
    assert int(suite.get("tests")) == len(cases) == 13 and suite.get("failures") == "0"
    assert all(c.get("classname") and c.get("name") for c in cases)
    md = kv(*["check", str(EXAMPLES / "deployments.yaml"), "-o", "markdown"]).stdout
    golden = GOLDEN / "check-deployments.md"
    if os.environ.get("KVPLAN_UPDATE_GOLDEN"):
        golden.write_text(md)
    assert md == golden.read_text()


def test_failures_in_junit(tmp_path: Path) -> None:
    f = _copy_examples(tmp_path)
    f.write_text(f.read_text().replace("max_kv: 9GiB", "max_kv: 8GiB"))
    junit = tmp_path / "j.xml"
    kv(*["check", str(f), "--junit", str(junit)])
    suite = ET.parse(junit).getroot().find("testsuite")
    failed = [c for c in suite.findall("testcase") if c.find("failure") is not None]
    assert suite.get("failures") == "1" and failed[0].get("name") == "max_kv"
    assert "passes with" in failed[0].find("failure").text


def test_unreadable_model_fails_only_its_deployment(tmp_path: Path) -> None:
    f = _copy_examples(tmp_path)
    f.write_text(f.read_text().replace("model: my-model.yaml", "model: missing.gguf"))
    r = kv(*["check", str(f), "-o", "json"])
    assert r.exit_code == 3
    doc = json.loads(r.stdout)
    status = {d["name"]: d["status"] for d in doc["deployments"]}
    assert status == {"chat-8b-llamacpp": "pass", "gemma-27b-two-gpus": "pass", "custom-spec": "error",
                      "llama-70b-vllm-tp4": "pass", "gpt-oss-120b-vllm": "pass"}  # fmt: skip
    assert "custom-spec" in r.stderr and "missing.gguf" in r.stderr


@pytest.mark.parametrize(
    ("text", "line", "key"),
    [
        ("deployments:\n  - model: llama-3.1-8b\n    ctxx: 4k\n", 3, "deployments[0].ctxx"),
        ("deployments:\n  - name: a\n", 2, "deployments[0].model"),
        ("deployments:\n  - model: llama-3.1-8b\n    budgets: {max_kv: lots}\n", 3, "deployments[0].budgets.max_kv"),
        ("deployments:\n  - model: llama-3.1-8b\n    budgets: {min_ctx: 4k}\n", 3, "deployments[0].budgets"),
        ("deployments:\n  - model: x\n    engine: ollama\n", 3, "deployments[0].engine"),
        ("deploy: []\n", 1, "deployments"),
    ],
)
def test_malformed_file_names_line_and_key(tmp_path: Path, text: str, line: int, key: str) -> None:
    f = tmp_path / "d.yaml"
    f.write_text(text)
    with pytest.raises(SpecError) as info:
        load_deployments(str(f))
    assert (info.value.line, info.value.key) == (line, key)
    r = kv(*["check", str(f)])
    assert r.exit_code == 3 and r.stderr.count("\n") == 1 and f"{f}:{line}" in r.stderr


def test_inline_budgets() -> None:
    ok = kv(*["estimate", "llama-3.1-8b", "-c", "32k", "--max-kv", "4GiB", "-o", "json"])
    assert ok.exit_code == 0
    bad = kv(*["estimate", "llama-3.1-8b", "-c", "32k", "--max-kv", "3GiB", "-o", "json"])
    assert bad.exit_code == 1 and "max_kv 4.00 GiB > 3.00 GiB" in bad.stderr
    r = kv(*["estimate", "llama-3.1-8b", "-c", "32k", "-np", "4", "--min-ctx", "16k", "-o", "csv"])
    assert r.exit_code == 1 and "gives 8192" in r.stderr
    r = kv(*["fit", "llama-3.1-8b", "--gpu", "RTX-4090", "--params", "8B", "--min-ctx", "200k"])
    assert r.exit_code == 1 and "min_ctx" in r.stderr
    r = kv(*["fit", "llama-3.1-8b", "--gpu", "RTX-4090", "--params", "8B", "--max-total", "10GiB"])
    assert r.exit_code == 1 and "max_total" in r.stderr
    assert kv(*["check", "/nonexistent/deployments.yaml"]).exit_code == 3
    assert kv(*["check", "--format", "pdf"]).exit_code == 2


def test_unsupported_model_exits_4(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text(
        "arch: mystery\nmetadata: {context_length: 1, embedding_length: 1, block_count: 1}\n"
    )
    f = tmp_path / "d.yaml"
    f.write_text("deployments:\n  - name: x\n    model: m.yaml\n")
    r = kv(*["check", str(f), "-o", "json"])
    assert r.exit_code == 4 and json.loads(r.stdout)["deployments"][0]["status"] == "error"


def test_engine_deployments_use_the_engine_solver(tmp_path: Path) -> None:
    """Engine budgets go through the same layout and solver as `fit --engine`, hybrids included."""
    from kvplan.engine_fit import make_target, solve
    from kvplan.hardware import gpu_memory
    from kvplan.layout.serving import EngineSettings
    from kvplan.sources import load_model

    f = tmp_path / "d.yaml"
    f.write_text(
        "deployments:\n"
        "  - name: gemma\n    model: gemma-3-27b\n    engine: vllm\n    gpu: H100-80GB\n    ctx: 32k\n"
        "    parallel: 2\n    max_num_batched_tokens: 4096\n"
        "    budgets: {min_parallel: 2, min_ctx: 32k, headroom: 5%}\n"
        "  - name: gemma-too-many\n    model: gemma-3-27b\n    engine: vllm\n    gpu: H100-80GB\n    ctx: 16k\n"
        "    parallel: 64\n    disable_hybrid_kv_cache_manager: true\n"
        "  - name: gemma-too-long\n    model: gemma-3-27b\n    engine: vllm\n    gpu: H100-80GB\n    ctx: 128k\n"
        "    parallel: 64\n    disable_hybrid_kv_cache_manager: true\n"
    )
    deps = load_deployments(str(f))
    ok, bad = evaluate(deps[0]), evaluate(deps[1])
    assert ok.status == "pass", ok.findings
    h100 = gpu_memory("H100-80GB")
    t = make_target(load_model("gemma-3-27b"), EngineSettings(max_num_batched_tokens=4096), h100, "H100-80GB",
                    None, None, None)  # fmt: skip
    found = solve(t, 32768, 2)
    assert found.requests == 2 and ok.findings[0].actual == "2 × 32768-token sequences"
    assert ok.summary["kv_bytes"] == 2 * found.capacity.request_bytes(32768)
    assert bad.status == "fail" and bad.suggestion and bad.suggestion.startswith("max parallel that fits at ctx 16384")
    n = int(bad.suggestion.rsplit(" ", 1)[1])
    t_off = make_target(load_model("gemma-3-27b"), EngineSettings(hybrid_kv_cache=False), h100, "H100-80GB",
                        None, None, None)  # fmt: skip
    assert solve(t_off, 16384, n).fits and not solve(t_off, 16384, n + 1).fits
    long = evaluate(deps[2])
    assert long.suggestion and long.suggestion.startswith("max ctx that fits for 64 sequence(s):")
    c = int(long.suggestion.split(": ")[1].split()[0])
    assert solve(t_off, c, 64).fits and not solve(t_off, c + 1, 64).fits
