"""Every exit code, with one line on stderr: a bad value is a usage error from every command, never "does not
fit"; -o json is always JSON."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import ORACLE, kv


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["fit", "qwen3-32b", "--gpu", "RTX-4090x2", "-ctk", "q8", "-fa", "on"],
            "-ctk: unknown cache type 'q8' (did you mean q8_0?)",
        ),
        (["fit", "qwen3-32b", "--gpu", "RTX-4090x2", "--backend", "gpu"], "--backend: unknown backend 'gpu'"),
        (["fit", "qwen3-32b", "--gpu", "RTX-4090x2", "-ctk", "fp8"], "-ctk: unknown cache type 'fp8'"),
        (["compare", "llama-3.1-8b", "-ctk", "q8"], "-ctk: unknown cache type 'q8'"),
        (["estimate", "llama-3.1-8b", "-ctk", "q8"], "-ctk: unknown cache type 'q8'"),
        (["estimate", "llama-3.1-8b", "-fa", "maybe"], "-fa: expected on, off or auto"),
        (["fit", "llama-3.1-8b", "--gpu", ""], "--gpu: empty; give a GPU preset"),
        (["fit", "llama-3.1-8b", "--gpu", "RTX4090x2x"], "--gpu: unknown GPU 'RTX4090x2x'"),
        (["fit", "llama-3.1-8b", "--gpu", "2xH100-80GBx3"], "--gpu: unknown GPU"),
        (["fit", "llama-3.1-8b", "--memory", "24"], "--memory: '24' would be 24 bytes; give a unit, e.g. 24GiB"),
        (["fit", "llama-3.1-8b", "--gpu", "L4", "--params", "8"], "--params: '8' would be 8 parameters; give a unit"),
        (["fit", "llama-3.1-8b", "--gpu", "L4", "-ts", "nan,1"], "-ts: proportions must be finite"),
        (["fit", "llama-3.1-8b", "--gpu", "L4", "-ts", "1,1"], "-ts: 2 proportions for 1 GPU(s)"),
        (
            ["fit", "llama-3.1-8b", "--memory", "24GiB,16GiB", "--overhead", "1GiB,1GiB,1GiB"],
            "--overhead: 3 sizes for 2 GPU(s); give one size for every GPU or one per GPU",
        ),
        (
            ["fit", "llama-3.1-8b", "--engine", "vllm", "--gpu", "L4x2", "-tp", "2", "--overhead", "1GiB,2GiB"],
            "--overhead: 2 sizes for 2 GPU(s); give one size for every GPU or one size: an engine's ranks are alike",
        ),
        (["fit", "llama-3.1-8b"], "give the hardware: --gpu NAME[xN] or --memory SIZE[,SIZE]"),
        (["fit", "llama-3.1-8b", "--gpu", "L4", "--cache-types", "best"], "--cache-types: the only value is auto"),
        (["fit", "llama-3.1-8b", "--gpu", "L4", "--fit", "maybe"], "--fit: expected on or off, not 'maybe'"),
        (["estimate", "llama-3.1-8b", "-c", "lots"], "-c: 'lots' is not a count"),
        (["estimate", "llama-3.1-8b", "--bogus"], "no such option: --bogus"),
        (["estimate", "llama-3.1-8b", "--gpu", "L4"], "--gpu is an option of `kvplan fit`, not of `kvplan estimate`"),
        (["estimate", "llama-3.1-8b", "-ctkk", "f16"], "no such option: -ctkk (did you mean -ctk?)"),
        (["estimate"], "missing MODEL"),
        (["estimate", "a", "b"], "unexpected argument 'b'"),
        (["estimate", "llama-3.1-8b", "-o", "pdf"], "-o: unknown format 'pdf'; expected one of table, json, markdown"),
        (["estimate", "llama-3.1-8b", "--format", "jsn"], "--format: unknown format 'jsn' (did you mean json?)"),
        (["estimate", "llama-3.1-8b", "--units", "furlongs"], "--units: unknown units 'furlongs'"),
        (["fit", "llama-3.1-8b", "--gpu", "L4", "--gpu", "T4"], "--gpu given twice; give the GPUs once: NAME[xN]"),
        (["fit", "llama-3.1-8b", "--memory", "24GiB", "--memory", "16GiB"], "--memory given twice"),
        (["nosuchcmd"], "no such command 'nosuchcmd'"),
        (["fitt"], "no such command 'fitt' (did you mean fit?)"),
    ],
)
def test_bad_values_are_usage_errors(args: list[str], message: str) -> None:
    r = kv(*args)
    assert r.exit_code == 2 and r.stderr.startswith("kvplan: usage error: ") and message in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1 and r.stdout == ""


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["estimate", "x.gguf"], 3, "x.gguf: no such file"),
        (["estimate", "no-such-model"], 3, "`kvplan models` lists the catalog"),
        (["estimate", "lama-3.1-8b"], 3, "did you mean llama-3.1-8b"),
        (["check", str(ORACLE / "real" / "qwen3-32b.gguf")], 3, "a GGUF model, not a deployments file"),
        (["estimate", "deepseek-v3", "--mtp"], 4, "MTP draft context needs nextn/MTP layers"),
        (["estimate", "llama-3.1-8b", "-ctv", "q4_0", "-fa", "off"], 4, "requires flash attention"),
        (["estimate", "llama-3.1-8b", "-np", "300"], 4, "n_seq_max must be <= 256"),
        (["fit", "qwen3-next-80b-a3b", "--engine", "trtllm", "--gpu", "H100-80GB"], 4, "state pages"),
    ],
)
def test_bad_input_and_refusals(args: list[str], code: int, message: str) -> None:
    r = kv(*args)
    assert r.exit_code == code and r.stderr.startswith("kvplan: error: ") and message in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1


def test_malformed_files(tmp_path: Path) -> None:
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\xff" * 16)
    r = kv("estimate", str(bad))
    assert r.exit_code == 3 and "bad.gguf: offset 8" in r.stderr and "Traceback" not in r.output
    unknown = tmp_path / "u.yaml"
    unknown.write_text("arch: mystery\nmetadata:\n  context_length: 1\n  embedding_length: 1\n  block_count: 1\n")
    r = kv("estimate", str(unknown))
    assert r.exit_code == 4 and "'mystery' is not one llama.cpp knows" in r.stderr


def test_json_is_always_json() -> None:
    """A refusal, an unreadable model, a usage error and "does not fit" are JSON documents too."""
    r = kv("estimate", "llama-3.1-8b", "-ctv", "q4_0", "-fa", "off", "-o", "json")
    assert r.exit_code == 4 and r.json()["error"] == {
        "kind": "refused",
        "exit_code": 4,
        "message": ("llama.cpp refuses: quantized V cache (q4_0) requires flash attention (-fa on)"),
    }
    assert kv("estimate", "nope", "--format=json").json()["error"]["exit_code"] == 3
    assert kv("estimate", "llama-3.1-8b", "-ctk", "q8", "-o", "json").json()["error"]["kind"] == "usage"
    r = kv("fit", "llama-3.1-70b", "--gpu", "T4", "--weights", "bf16", "--fit", "off", "-o", "json")
    doc = r.json()
    assert r.exit_code == 1 and doc["fits"] is False and doc["shortfall"]["constraint"] == "weights"
    assert doc["run_args"] == [] and doc["answer"].startswith(
        "llama.cpp: does not fit: not even 1 sequence of 256 tokens"
    )


def test_does_not_fit_says_why_and_what_would() -> None:
    # 32.76 B parameters (counted) × q4_k_m = 18.69 GiB of weights fit on a 24,564 MiB card (23.99 GiB); with the
    # preset's 1 GiB CUDA context estimate and llama.cpp's compute buffer (the logits, 151,936 × ubatch 512 × 4 B,
    # then the KQ mask), 4.00 GiB are left: 128k tokens of f16 KV (32 GiB) do not fit
    r = kv("fit", "qwen3-32b", "--gpu", "RTX-4090", "-c", "128k", "--fit", "off")
    assert r.exit_code == 1
    first = r.stdout.splitlines()[0]
    assert first == (
        "llama.cpp: does not fit: 1 sequence of 131,072 tokens on RTX-4090 with f16 KV: the KV cache (32.00 GiB) "
        "exceeds the 4.00 GiB left on GPU0 after weights, compute and overhead"
    )
    # the longest context: 4.302 GiB after weights and overhead, less the compute buffer (its 297 MiB of logits and
    # the rest of the graph at that context), ÷ 256 KiB of KV per token: 16,384 tokens in steps of 256
    assert "would fit: -c 16384 -np 1 (the longest context: 1 sequence of 16,384 tokens)" in r.stdout
    assert "run:" not in r.stdout
    engine = kv("fit", "llama-3.1-70b", "--engine", "sglang", "--gpu", "L4", "--params", "70B")
    assert engine.exit_code == 1 and "the weights (130.39 GiB) exceed" in engine.stdout and "run:" not in engine.stdout


def test_a_gpus_file_takes_sizes_with_their_units(tmp_path: Path) -> None:
    """A number without a unit is refused there as on the command line: nvidia-smi's 24564 is MiB, and reading it
    as GiB (as kvplan once did) made a 24 TiB GPU."""
    table = tmp_path / "gpus.yaml"
    table.write_text("MY-GPU: 24564\n")
    r = kv("fit", "llama-3.1-8b", "--gpus-file", str(table), "--gpu", "MY-GPU")
    assert r.exit_code == 3 and "gpus.yaml: MY-GPU: 24564 would be 24564 bytes; give a unit" in r.stderr, r.stderr
    table.write_text("MY-GPU: 24564MiB\n")
    doc = kv("fit", "llama-3.1-8b", "--gpus-file", str(table), "--gpu", "MY-GPU", "-o", "json").json()
    assert doc["devices"][0]["memory_bytes"] == 24564 << 20
