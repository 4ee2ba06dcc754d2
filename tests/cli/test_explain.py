"""`kvplan explain LOG`: llama.cpp's own startup logs of the real Gemma 3 270M, every format, the model found
beside the log or given, stdin, and the errors a user meets (no model, not a log), each one line and its exit code."""

from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

import pytest
from helpers import FIXTURES, kv

import kvplan

LOGS = FIXTURES / "logs" / "llamacpp"
META = FIXTURES / "oracle" / "file" / "gemma-3-270m-q4_k_m.meta.gguf"
LOG = LOGS / "gemma-3-270m-np3-swa-full.log"


def test_a_log_with_its_model_is_explained_in_every_format() -> None:
    r = kv("explain", str(LOG), "-m", str(META), width=80)
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("llama.cpp log: all 16 figures equal kvplan's plan of the same settings")
    flat = " ".join(r.stdout.split())
    assert "-c 12288 -np 3 -b 2048 -ub 512 -ctk f16 -ctv f16 -fa auto --swa-full (cpu buffers)" in flat
    assert "padded to 256 cells per sequence" in flat  # the Why column is kept at 80 columns, wrapped
    # wrapped, never cut (only the model's path, one unbreakable word here, may run past the width)
    assert max(len(line) for line in r.stdout.splitlines() if "/" not in line) <= 80
    doc = kv("explain", str(LOG), "-m", str(META), "-o", "json").json()
    assert doc["explained"] is True and doc["runs"] == 1 and doc["settings"]["swa_full"] is True
    by = {f["figure"]: f for f in doc["figures"]}
    compute = by["CPU compute buffer, MiB"]  # (the metadata-only copy: its bytes are exact with the file's tensors)
    assert compute["kvplan"] == "514.50" and isinstance(compute["kvplan_bytes"], int) and by["n_ctx"]["equal"] is True
    rows = list(csv.DictReader(io.StringIO(kv("explain", str(LOG), "-m", str(META), "-o", "csv").stdout)))
    assert len(rows) == 16 and rows[-1]["kvplan_bytes"] == str(compute["kvplan_bytes"])
    md = kv("explain", str(LOG), "-m", str(META), "-o", "markdown").stdout
    assert "| Figure | Log | kvplan | Equal | Why |" in md


def test_the_model_beside_the_log_and_stdin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copy(LOG, tmp_path / "server.log")
    shutil.copy(META, tmp_path / "gemma-3-270m-q4_k_m.gguf")  # where the log says llama.cpp loaded it from
    assert kv("explain", str(tmp_path / "server.log")).exit_code == 0
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(LOG.read_bytes())))
    r = kv("explain", "-")
    assert r.exit_code == 0 and "all 16 figures equal" in r.stdout


def test_the_library_returns_the_same_document() -> None:
    doc = kvplan.explain(str(LOG), model=str(META)).to_dict()
    assert doc == kv("explain", str(LOG), "-m", str(META), "-o", "json").json()


def test_a_figure_kvplan_does_not_reach_exits_1(tmp_path: Path) -> None:
    text = LOG.read_text().replace("K (f16):   18.00 MiB", "K (f16):   18.01 MiB", 1)
    (tmp_path / "edited.log").write_text(text)
    r = kv("explain", str(tmp_path / "edited.log"), "-m", str(META))
    assert r.exit_code == 1 and r.stdout.startswith("llama.cpp log: 1 of 16 figures not explained")


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        ((str(LOGS / "harness" / "llama-dense-c4096.log"), "-m", "/nonexistent.gguf"), 3, "/nonexistent.gguf"),
        (("/nonexistent.log",), 3, "/nonexistent.log: cannot read the log"),
        ((str(META),), 3, "binary data, not a log"),
        ((str(FIXTURES / "logs" / "llamacpp" / "index.json"),), 3, "not a llama.cpp, vLLM or SGLang startup log"),
    ],
)
def test_errors_are_one_line_with_their_exit_code(args: tuple[str, ...], code: int, message: str) -> None:
    r = kv("explain", *args)
    assert r.exit_code == code and message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.output


def test_without_its_model_the_log_describes_it(tmp_path: Path) -> None:
    """The model file not here: the loader's metadata dump describes the model, every context and KV figure is
    explained from it, and the buffers the file's tensors decide are named (exit 1: not every figure explained)."""
    r = kv("explain", str(LOG), "-o", "json")
    doc = r.json()
    assert r.exit_code == 1 and doc["explained"] is False and "(the log's metadata dump)" in doc["model"]["source"]
    left = [f["figure"] for f in doc["figures"] if not f["equal"]]
    assert left == ["CPU_Mapped model buffer, MiB", "CPU_REPACK model buffer, MiB", "CPU compute buffer, MiB"]
    assert sum(f["equal"] for f in doc["figures"]) == 15
    (tmp_path / "cut.log").write_text("".join(ln for ln in LOG.read_text().splitlines(True) if "- kv" not in ln))
    r = kv("explain", str(tmp_path / "cut.log"))
    assert r.exit_code == 2 and "is not readable here, and it has no metadata dump of the model" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_a_file_of_several_runs_explains_the_last_and_says_so(tmp_path: Path) -> None:
    first = (LOGS / "gemma-3-270m-default-c4096.log").read_text()
    (tmp_path / "server.log").write_text(first + "srv  log_server_r: request: POST /completion 200\n" + LOG.read_text())
    doc = kv("explain", str(tmp_path / "server.log"), "-m", str(META), "-o", "json").json()
    assert doc["runs"] == 2 and doc["settings"]["n_ctx"] == 12288
    assert doc["warnings"] == ["the file holds 2 runs; the last one is explained"]


def test_a_vllm_refusal_in_every_format() -> None:
    """vLLM's refusal pasted from a public thread (vllm-project/recipes#12): the table at 80 columns, JSON with
    what the log states (the refused length, the GiB it printed, vLLM's estimate) and the figures' bytes, CSV."""
    log = FIXTURES / "logs" / "vllm" / "pr-recipes-12-qwen3-coder-480b-fp8-h20-dp8.log"
    args = ("explain", str(log), "-m", str(FIXTURES / "logs" / "vllm" / "models" / "qwen3-coder-480b-a35b"),
            "--gpu", "H100-80GB")  # fmt: skip
    r = kv(*args, width=80)
    assert r.exit_code == 0 and r.stdout.startswith("vLLM log: all 2 figures equal"), r.output
    assert max(len(line) for line in r.stdout.splitlines() if "/" not in line) <= 80
    doc = kv(*args, "-o", "json").json()
    assert doc["log"]["refused_max_model_len"] == 262_144 and doc["log"]["estimated_max_model_len"] == 205_728
    assert (doc["log"]["needed_gib"], doc["log"]["refusal_available_gib"]) == ("62.00", "48.66")
    need = {f["figure"]: f for f in doc["figures"]}["KV cache one request of 262,144 tokens needs, GiB"]
    assert need["kvplan_bytes"] == 262_144 * 62 * 2 * 8 * 128 * 2  # 62 layers × (K + V) 8 heads × 128 × bf16
    assert any(c["flags"] == "--max-model-len 205728 (the longest that fits)" for c in doc["changes"])
    rows = list(csv.DictReader(io.StringIO(kv(*args, "-o", "csv").stdout)))
    assert [row["equal"] for row in rows] == ["True", "True"]
