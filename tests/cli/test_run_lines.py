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
    # SGLang's cap on its pool: the line carries it (and the plan is the capped pool's)
    ("gpt-oss-20b", ["--engine", "sglang", "--gpu", "H100-80GB"], ["--max-total-tokens", "50001", "--page-size", "16"]),
    ("gpt-oss-20b", ["--engine", "sglang", "--gpu", "H100-80GB"], ["--swa-full-tokens-ratio", "0.3"]),
    # the radix cache off with a request cap: SGLang's SWA pool from the requests (and the chunk it reads)
    (
        "gpt-oss-20b",
        ["--engine", "sglang", "--gpu", "H100-80GB"],
        ["--disable-radix-cache", "--max-running-requests", "64", "--chunked-prefill-size", "4096"],
    ),
    (NEMOTRON, ["--engine", "sglang", "--gpu", "H200", "--params", "8B"], ["--max-mamba-cache-size", "40"]),
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


def test_advice_and_run_lines_in_the_engines_words(tmp_path) -> None:
    """Each engine's advice uses its own flag names; a run line names what the engine takes (a Hugging Face id, a
    checkpoint folder — never a kvplan spec, which gets a placeholder and a note) and keeps the flags the user gave
    that the engine reads."""
    from helpers import EXAMPLES

    sg = kv("fit", "llama-3.1-8b", "--engine", "sglang", "--gpu", "RTX-4090", "--context-length", "128k",
            "--max-running-requests", "8", "-o", "json").json()  # fmt: skip
    assert {a["flags"][0] for a in sg["shortfall"]["alternatives"]} <= {"--context-length", "--max-running-requests"}
    trt = kv("fit", "llama-3.1-8b", "--engine", "trtllm", "--gpu", "RTX-4090", "--max_seq_len", "128k",
             "--max_batch_size", "8", "-o", "json").json()  # fmt: skip
    assert trt["shortfall"]["alternatives"][0]["flags"][0] == "--max_seq_len"
    folder = kv("fit", NEMOTRON + "/config.json", "--engine", "vllm", "--gpu", "H100-80GB", "--params", "8B",
                "-o", "json").json()  # fmt: skip
    assert folder["run_command"] == f"vllm serve {NEMOTRON}"
    spec = kv("fit", str(EXAMPLES / "my-model.yaml"), "--engine", "vllm", "--gpu", "H100-80GB", "--params", "8B")
    assert "run: vllm serve <checkpoint> " in spec.stdout and "is kvplan's model spec, which vLLM does not read" in (
        spec.stdout
    )
    given = kv("fit", "llama-3.1-8b", "--engine", "vllm", "--gpu", "H100-80GB", "--max-num-batched-tokens", "4096",
               "--no-enable-prefix-caching", "-o", "json").json()  # fmt: skip
    assert given["run_command"] == "vllm serve meta-llama/Llama-3.1-8B-Instruct"
    assert given["run_args"][-3:] == ["--max-num-batched-tokens", "4096", "--no-enable-prefix-caching"]
