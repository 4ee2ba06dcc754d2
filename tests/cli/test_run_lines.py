"""The printed run line carries every flag the answer depends on: fed back to kvplan (with the same hardware and
weights), it gives the same plan, byte for byte. For llama.cpp the question is mostly asked with its default
--fit on (llama.cpp's fit chooses -c, -ngl, -ts, -ot; the run line pins them with --fit off)."""

from __future__ import annotations

import pytest
from helpers import FIXTURES, kv

NEMOTRON = str(FIXTURES / "engines" / "configs" / "nemotron-h-8b")

CASES = [
    # (model, hardware and weights, the question)
    ("qwen3-32b", ["--gpu", "RTX-4090", "--weights", "q4_k_m"], ["-ctk", "q8_0", "-ctv", "f16", "-fa", "off"]),
    ("llama-3.1-8b", ["--gpu", "L4"], ["--ctx-per-seq", "16k", "-b", "1024", "-ub", "256"]),
    # llama.cpp's fit gives up where -ts is given (and that context does not fit): kvplan's longest context
    ("gemma-3-27b", ["--gpu", "RTX-4090x2"], ["-np", "4", "-kvu", "--swa-full", "-ts", "3,1", "--fit", "off"]),
    ("gemma-3-12b", ["--gpu", "A10"], ["--cache-types", "auto", "-c", "128k"]),
    ("llama-3.1-8b", ["--gpu", "RTX-4090"], ["-c", "64k", "-ngl", "20", "-nkvo"]),
    # a pasted llama-server line: its other arguments stay on the run line
    ("llama-3.1-8b", ["--gpu", "RTX-4090"], ["-c", "32k", "-t", "8", "--port", "8080", "--jinja", "--temp", "0.7"]),
    ("llama-3.1-70b", ["--engine", "vllm", "--gpu", "H100-80GBx4"], ["-tp", "4", "--max-model-len", "32k"]),
    (
        "gemma-3-27b",
        ["--engine", "vllm", "--gpu", "H100-80GB"],
        ["--max-num-seqs", "4", "--max-num-batched-tokens", "4096", "--gpu-memory-utilization", "0.85"],
    ),
    (
        "gpt-oss-20b",
        ["--engine", "vllm", "--gpu", "A100-80GB", "--weights", "mxfp4"],
        ["--disable-hybrid-kv-cache-manager", "--block-size", "32", "--kv-cache-dtype", "fp8"],
    ),
    (
        "deepseek-v3",
        ["--engine", "sglang", "--gpu", "H200x8", "--weights", "fp8"],
        ["-tp", "8", "--mem-fraction-static", "0.85"],
    ),
    ("qwen3-32b", ["--engine", "trtllm", "--gpu", "H100-80GBx2"], ["-tp", "2", "--free-gpu-memory-fraction", "0.8"]),
    (
        NEMOTRON,
        ["--engine", "vllm", "--gpu", "H100-80GBx2", "--params", "8B"],
        [
            "-tp",
            "2",
            "--kv-cache-memory-bytes",
            "30GiB",
            "--no-enable-prefix-caching",
            "--mamba-ssm-cache-dtype",
            "bfloat16",
        ],
    ),
    ("qwen3-next-80b-a3b", ["--engine", "vllm", "--gpu", "B200x2"], ["-tp", "2", "--max-model-len", "-1"]),
    (NEMOTRON, ["--engine", "sglang", "--gpu", "H200", "--params", "8B"], ["--disable-radix-cache"]),
]


@pytest.mark.parametrize(("model", "where", "question"), CASES)
def test_the_run_line_reproduces_the_plan(model: str, where: list[str], question: list[str]) -> None:
    first = kv("fit", model, *where, *question, "-o", "json")
    assert first.exit_code == 0, first.output
    doc = first.json()
    again = kv("fit", model, *where, *doc["run_args"], "-o", "json")
    assert again.exit_code == 0, (doc["run_args"], again.output)
    redo = again.json()
    assert redo["devices"] == doc["devices"]
    assert (redo["ctx_per_seq"], redo["cache"]) == (doc["ctx_per_seq"], doc["cache"])
    if doc["runtime"] == "llama.cpp":
        assert redo["mode"] == "check" and redo["llamacpp"] == doc["llamacpp"]
        assert (redo["n_seq"], redo["kv_bytes"]) == (doc["n_seq"], doc["kv_bytes"])
    else:
        # the pool is the plan; how many sequences it is asked to hold is the question (--max-num-seqs)
        assert {k: v for k, v in redo["engine"].items() if k != "sequences_that_fit"} == {
            k: v for k, v in doc["engine"].items() if k != "sequences_that_fit"
        }
