"""Flags mean what the runtime means: llama.cpp's spelling in every command, vLLM's (with SGLang's and
TensorRT-LLM's aliases) for the engines; a flag of the other runtime says what to use instead."""

from __future__ import annotations

import pytest
from helpers import kv

from kvplan import __version__


def test_c_is_shared_by_the_sequences_in_every_command() -> None:
    """llama.cpp's -c 32k -np 4 gives each sequence 8k, in estimate, fit and check alike."""
    est = kv("estimate", "llama-3.1-8b", "-c", "32k", "-np", "4", "-o", "json").json()
    assert est["runtime"]["n_ctx"] == 32768 and est["runtime"]["n_ctx_seq"] == 8192
    fit = kv("fit", "llama-3.1-8b", "--gpu", "H100-80GB", "-c", "32k", "-np", "4", "--fit", "off", "-o", "json").json()
    assert fit["mode"] == "check" and fit["ctx_per_seq"] == 8192 and fit["n_seq"] == 4
    assert fit["llamacpp"]["runtime"]["n_ctx"] == 32768 and fit["run_args"][:4] == ["-c", "32768", "-np", "4"]
    per_seq = kv("fit", "llama-3.1-8b", "--gpu", "H100-80GB", "--ctx-per-seq", "32k", "-np", "4", "-o", "json")
    # llama.cpp's fit keeps a context the user gave (-c or kvplan's --ctx-per-seq)
    assert per_seq.json()["llamacpp"]["runtime"]["n_ctx"] == 4 * 32768
    # the long spellings are the same flags
    assert kv("estimate", "llama-3.1-8b", "--ctx-size", "32k", "--parallel", "4", "-o", "json").json() == est
    both = kv("fit", "llama-3.1-8b", "--gpu", "L4", "-c", "8k", "--ctx-per-seq", "8k")
    assert both.exit_code == 2 and "not both" in both.stderr


def test_vllm_spelling_and_the_aliases() -> None:
    base = ["fit", "llama-3.1-70b", "--engine", "vllm", "--gpu", "H100-80GBx4", "-o", "json"]
    a = kv(*base, "-tp", "4", "--max-model-len", "32k", "--max-num-seqs", "8").json()
    b = kv(*base, "--tensor-parallel-size", "4", "--context-length", "32k", "--max-running-requests", "8").json()
    c = kv(*base, "--tp_size", "4", "--max_seq_len", "32k", "--max_batch_size", "8").json()
    # --max-num-seqs is the scheduler's cap (the engine starts when one request fits); the answer is how many fit
    assert a == b == c and a["mode"] == "max-parallel" and a["ctx_per_seq"] == 32768
    assert a["engine"]["max_num_seqs"] == a["engine"]["scheduler_cap"] == 8 and a["engine"]["requests_at_once"] >= 8
    for engine in ("VLLM", "vLLM", "Vllm"):
        assert kv("fit", "llama-3.1-8b", "--engine", engine, "--gpu", "H100-80GB").exit_code == 0
    assert kv("fit", "llama-3.1-8b", "--engine", "TensorRT-LLM", "--gpu", "H100-80GB").exit_code == 0
    assert kv("fit", "llama-3.1-8b", "--engine", "LLAMA.CPP", "--gpu", "H100-80GB").exit_code == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--engine", "vllm", "-c", "32k"], "-c: is a llama.cpp setting; for vllm use --max-model-len (per sequence)"),
        (["--engine", "sglang", "-np", "4"], "-np: is a llama.cpp setting; for sglang use --max-num-seqs"),
        (["--max-model-len", "8k"], "--max-model-len: is a serving-engine setting; for llama.cpp use --ctx-per-seq"),
        (["-tp", "2"], "-tp: is a serving-engine setting; for llama.cpp use -ts"),
        (["--engine", "sglang", "--gpu-memory-utilization", "0.9"], "is vLLM's; SGLang does not have it"),
        (["--engine", "vllm", "--mem-fraction-static", "0.9"], "is SGLang's; vLLM does not have it"),
        (["--engine", "ollama"], "--engine: unknown runtime 'ollama'; expected one of llama.cpp, vllm, sglang"),
        (["--engine", "trtllm", "--kv-cache-memory-bytes", "8GiB"], "is vLLM's; TensorRT-LLM does not have it"),
        (["--engine", "trtllm", "--disable-radix-cache"], "is vLLM, SGLang's; TensorRT-LLM does not have it"),
        (["--engine", "vllm", "--mamba-ssm-cache-dtype", "fp8"], "unknown Mamba SSM cache dtype 'fp8'"),
        (["--engine", "vllm", "--max-model-len", "-2"], "--max-model-len"),
    ],
)
def test_a_flag_of_another_runtime_says_what_to_use(args: list[str], message: str) -> None:
    r = kv("fit", "llama-3.1-8b", "--gpu", "H100-80GB", *args)
    assert r.exit_code == 2 and message in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_max_model_len_minus_one_is_vllms_auto_fit() -> None:
    base = ["fit", "qwen3-8b", "--engine", "vllm", "--gpu", "RTX-4090", "-o", "json"]
    auto, plain = kv(*base, "--max-model-len", "-1").json(), kv(*base).json()
    assert auto == plain and auto["mode"] == "max-ctx" and 0 < auto["ctx_per_seq"] < 40960


def test_n_gpu_layers_is_partial_offload() -> None:
    doc = kv("fit", "llama-3.1-8b", "--gpu", "RTX-4090", "-c", "8k", "-ngl", "17", "-o", "json").json()
    gpu, host = doc["devices"]
    assert (gpu["first_layer"], gpu["last_layer"]) == (16, 31)
    assert host["device"] == "host" and (host["first_layer"], host["last_layer"]) == (0, 15)
    assert "-ngl" in doc["run_args"] and doc["run_args"][doc["run_args"].index("-ngl") + 1] == "17"
    for spelling in ("--n-gpu-layers", "--gpu-layers"):
        same = kv("fit", "llama-3.1-8b", "--gpu", "RTX-4090", "-c", "8k", spelling, "17", "-o", "json").json()
        assert same == doc
    everything = kv("fit", "llama-3.1-8b", "--gpu", "RTX-4090", "-c", "8k", "-ngl", "all", "-o", "json").json()
    assert len(everything["devices"]) == 1 and "-ngl" in everything["run_args"]


def test_version_gpus_and_hugging_face_ids() -> None:
    r = kv("--version")
    assert r.exit_code == 0 and r.stdout == f"kvplan {__version__}\n"
    gpus = kv("gpus", "-o", "json").json()["gpus"]
    h100 = next(g for g in gpus if g["name"] == "H100-80GB")
    assert h100["memory_bytes"] == 81559 << 20 and "nvidia-smi" in h100["source"] and h100["capability"] == "9.0"
    assert next(g for g in gpus if g["name"] == "B200")["source"] == "nominal"
    by_id = kv("estimate", "meta-llama/Llama-3.1-8B-Instruct", "-c", "4k", "-o", "json").json()
    assert by_id["model"]["name"] == "llama-3.1-8b" and by_id["memory"]["total_bytes"] == 512 << 20
    assert kv("fit", "llama-3.1-8b", "--gpu", "rtx4090").exit_code == 0


def test_trained_context_is_never_passed_silently() -> None:
    r = kv("estimate", "phi-3-mini-4k", "-c", "8k", "-o", "json")
    assert r.exit_code == 0 and r.json()["warnings"] == [
        "n_ctx_seq 8,192 exceeds the model's trained context 4,096 (llama.cpp warns: possible training context "
        "overflow)"
    ]
    assert "warning: n_ctx_seq 8,192 exceeds" in kv("estimate", "phi-3-mini-4k", "-c", "8k").stdout
    fit = kv("fit", "qwen3-32b", "--gpu", "H200", "-c", "200k", "-o", "json").json()
    assert fit["warnings"] and "trained context 40,960" in fit["warnings"][0]
    capped = kv("fit", "llama-2-7b", "--gpu", "H100-80GB", "--fit", "off", "-o", "json").json()
    assert capped["capped_by_trained"] and capped["ctx_per_seq"] == 4096
    assert capped["answer"].endswith("(capped at the model's trained context)")
    assert any("still free on GPU0" in n for n in capped["notes"])
