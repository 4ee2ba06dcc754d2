"""`kvplan simulate --engine sglang`: SGLang's flags reach the ported scheduler, the pool is `fit`'s, what SGLang
refuses is refused, and the run keeps the pool's invariant (the scheduler itself: test_sglang_scheduler.py)."""

from __future__ import annotations

import pytest
from helpers import FIXTURES, kv

BASE = ("simulate", "llama-3.1-8b", "--engine", "sglang", "--gpu", "H100-80GB")


def test_the_pool_is_fits_and_sglangs_defaults_for_the_gpu() -> None:
    doc = kv(*BASE, "--context-length", "8192", "--request-rate", "2", "--duration", "5", "-o", "json").json()
    fit = kv("fit", "llama-3.1-8b", "--engine", "sglang", "--gpu", "H100-80GB", "--context-length", "8192",
             "-o", "json").json()  # fmt: skip
    sched = doc["scheduler"]
    assert sched["max_total_num_tokens"] == fit["engine"]["kv_tokens_per_gpu"] == doc["kv_capacity"]
    assert sched["max_running_requests"] == fit["engine"]["max_running_requests"]
    # handle_gpu_memory_settings: 8192 on an 80 GB GPU (SGLang's own logs of H100 runs say so); ServerArgs' 16384
    assert (sched["chunked_prefill_size"], sched["max_prefill_tokens"]) == (8192, 16384)
    assert sched["radix_cache"] and sched["overlap_schedule"] and sched["schedule_policy"] == "fcfs"
    assert doc["kv_unit"] == "tokens" and doc["blocks_returned"]
    assert doc["engine"]["label"] == "SGLang 0.5.23 on H100-80GB"


def test_sglang_flags_reach_the_scheduler() -> None:
    doc = kv(*BASE, "--context-length", "8192", "--request-rate", "2", "--duration", "5", "--chunked-prefill-size",
             "1024", "--max-prefill-tokens", "4096", "--schedule-policy", "lpm", "--schedule-conservativeness", "0.5",
             "--enable-mixed-chunk", "--disable-overlap-schedule", "--disable-radix-cache", "--max-running-requests",
             "16", "--page-size", "16", "-o", "json").json()  # fmt: skip
    sched = doc["scheduler"]
    assert sched == {**sched, "chunked_prefill_size": 1024, "max_prefill_tokens": 4096, "schedule_policy": "lpm",
                     "schedule_conservativeness": 0.5, "enable_mixed_chunk": True, "overlap_schedule": False,
                     "radix_cache": False, "max_running_requests": 16, "page_size": 16}  # fmt: skip
    assert doc["blocks_returned"]


def test_chunking_off_prefills_a_prompt_whole() -> None:
    """--chunked-prefill-size -1 (SGLang's scheduler without chunks, recorded: the chunking-off workloads of the
    scheduler fixtures): a prompt longer than --max-prefill-tokens prefills in one step of its own."""
    doc = kv(*BASE, "--context-length", "8192", "--request-rate", "2", "--duration", "10", "--prompt-len",
             "6000", "--output-len", "20", "--chunked-prefill-size", "-1", "--max-prefill-tokens", "4096",
             "-o", "json").json()  # fmt: skip
    assert doc["scheduler"]["chunked_prefill_size"] == -1 and doc["blocks_returned"]
    run = {r["metric"]: r["value"] for r in doc["run"]}
    assert run["steps with prefill"] == run["requests arrived"]  # each prompt's 6,000 tokens in one step
    chunked = kv(*BASE, "--context-length", "8192", "--request-rate", "2", "--duration", "10", "--prompt-len",
                 "6000", "--output-len", "20", "--chunked-prefill-size", "2048", "-o", "json").json()  # fmt: skip
    assert {r["metric"]: r["value"] for r in chunked["run"]}["steps with prefill"] >= 3 * run["requests arrived"]


def test_a_small_pool_retracts_and_gives_every_token_back() -> None:
    """An RTX 4090 holds 12,928 tokens of Llama-3.1-8B: long outputs admitted at the new-token ratio outgrow it,
    and SGLang retracts; once every request ended, the free and evictable tokens are the whole pool."""
    doc = kv("simulate", "llama-3.1-8b", "--engine", "sglang", "--gpu", "RTX-4090", "--context-length", "8192",
             "--request-rate", "8", "--duration", "10", "--prompt-len", "lognormal:1500:0.7", "--output-len",
             "uniform:100:1200", "--shared-prefix", "500", "-o", "json").json()  # fmt: skip
    run = {r["metric"]: r["value"] for r in doc["run"]}
    assert run["retractions"] > 0 and run["requests retracted"] > 0
    assert run["free tokens after the last request"] == doc["kv_capacity"] == 12928 and doc["blocks_returned"]
    assert any("retractions: SGLang's pool had no room" in w for w in doc["warnings"])


def test_a_prompt_sglang_refuses() -> None:
    """validate_input_length: a prompt of max_req_input_len tokens or more (the context less 6 here) is refused."""
    doc = kv(*BASE, "--context-length", "4096", "--request-rate", "2", "--duration", "3", "--prompt-len", "4090",
             "-o", "json").json()  # fmt: skip
    run = {r["metric"]: r["value"] for r in doc["run"]}
    assert run["refused by SGLang (prompt ≥ its longest input)"] == run["requests arrived"] > 0
    assert any("Input length (4090 tokens) exceeds the maximum allowed length (4090 tokens)" in w
               for w in doc["warnings"])  # fmt: skip
    ok = kv(*BASE, "--context-length", "4096", "--request-rate", "2", "--duration", "3", "--prompt-len", "4089",
            "-o", "json").json()  # fmt: skip
    assert {r["metric"]: r["value"] for r in ok["run"]}["served to the end"] > 0


def test_a_sliding_window_model_runs_on_both_pools() -> None:
    """gpt-oss-20b: SGLang's full pool and its sliding-window pool beside it (0.8 of it, as `fit` sizes them), the
    window SGLang's attention keeps (gpt-oss's 128 less one); long prompts squeeze the SWA pool, and once every
    request ended both pools are whole again (a token either pool kept would show as leaked)."""
    doc = kv("simulate", "gpt-oss-20b", "--engine", "sglang", "--gpu", "RTX-4090", "--context-length", "8192",
             "--request-rate", "6", "--duration", "20", "--prompt-len", "lognormal:3000:0.5", "--output-len",
             "uniform:100:1500", "-o", "json").json()  # fmt: skip
    fit = kv("fit", "gpt-oss-20b", "--engine", "sglang", "--gpu", "RTX-4090", "--context-length", "8192",
             "-o", "json").json()  # fmt: skip
    sched = doc["scheduler"]
    assert sched["max_total_num_tokens"] == fit["engine"]["kv_tokens_per_gpu"] == doc["kv_capacity"]
    assert sched["swa_max_total_num_tokens"] == fit["engine"]["swa_tokens_per_gpu"] == 72226  # 0.8 × 90,283
    assert sched["sliding_window_size"] == 127
    run = {r["metric"]: r["value"] for r in doc["run"]}
    refused = run.get("refused by SGLang (prompt ≥ its longest input)", 0)
    assert run["served to the end"] + refused == run["requests arrived"] > 0 and doc["blocks_returned"]
    assert any("sliding-window pool beside it" in n for n in doc["notes"])


def test_a_mamba_hybrid_runs_on_its_state_pool() -> None:
    """Falcon-H1 7B on an RTX 4090: SGLang's state pool as `fit` sizes it (7 slots, so one request at a time: five
    slots a request with the radix cache), the extra buffer's checkpoints on the chunk its checkpoint states (the
    catalog's checkpoint.config: 256; Falcon-H1 34B's 128), SGLang's default for one that states none (Granite 4.0 H
    Tiny: said so); a config.json's own chunk_size is read (Nemotron-H: 128); every slot comes back."""
    doc = kv("simulate", "falcon-h1-7b", "--engine", "sglang", "--gpu", "RTX-4090", "--context-length", "8192",
             "--request-rate", "4", "--duration", "10", "--shared-prefix", "300", "-o", "json").json()  # fmt: skip
    fit = kv("fit", "falcon-h1-7b", "--engine", "sglang", "--gpu", "RTX-4090", "--context-length", "8192",
             "-o", "json").json()  # fmt: skip
    sched = doc["scheduler"]
    assert sched["max_mamba_cache_size"] == fit["engine"]["state_slots"] == 7
    assert sched["max_running_requests"] == fit["engine"]["max_running_requests"] == 1
    assert doc["blocks_returned"]
    assert any("every 256 tokens of a chunk" in n for n in doc["notes"])
    assert not any("mamba_cache_chunk_size" in n for n in doc["notes"])
    big = kv("simulate", "falcon-h1-34b", "--engine", "sglang", "--gpu", "H100-80GBx2", "-tp", "2", "--request-rate",
             "2", "--duration", "5", "-o", "json").json()  # fmt: skip
    assert any("every 128 tokens of a chunk" in n for n in big["notes"]) and big["blocks_returned"]
    default = kv("simulate", "granite-4.0-h-tiny", "--engine", "sglang", "--gpu", "H100-80GB", "--request-rate", "2",
                 "--duration", "5", "-o", "json").json()  # fmt: skip
    assert any("mamba_cache_chunk_size 256: SGLang's default for granitehybrid" in n for n in default["notes"])
    own = kv("simulate", str(FIXTURES / "engines" / "configs" / "nemotron-h-8b" / "config.json"), "--params", "8e9",
             "--engine", "sglang", "--gpu", "H100-80GB", "--context-length", "8192", "--request-rate", "4",
             "--duration", "5", "-o", "json").json()  # fmt: skip
    assert any("every 128 tokens of a chunk" in n for n in own["notes"]) and own["blocks_returned"]
    assert not any("mamba_cache_chunk_size" in n for n in own["notes"])


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (("simulate", "falcon-mamba-7b", "--engine", "sglang", "--gpu", "H100-80GB", "--request-rate", "1"), 4,
         "SGLang's Mamba checkpoint grid for the mamba architecture is not known to kvplan"),
        (("simulate", "llama-3.1-8b", "--engine", "sglang", "--gpu", "H100-80GBx2", "--pp-size", "2",
          "--request-rate", "1"), 4, "drop --pp-size"),
        (("simulate", "llama-3.1-8b", "--engine", "vllm", "--gpu", "H100-80GB", "--chunked-prefill-size", "1024",
          "--request-rate", "1"), 2, "--chunked-prefill-size: is SGLang's; vLLM does not have it"),
        ((*BASE, "--schedule-policy", "lifo", "--request-rate", "1"), 2, "expected one of fcfs, lpm"),
        (("fit", "llama-3.1-8b", "--engine", "sglang", "--gpu", "H100-80GB", "--schedule-policy", "lpm"), 2,
         "--schedule-policy"),
        (("fit", "llama-3.1-8b", "--engine", "sglang", "--gpu", "H100-80GB", "--chunked-prefill-size", "-2"), 2,
         "--chunked-prefill-size"),
        (("fit", "llama-3.1-8b", "--engine", "vllm", "--gpu", "H100-80GB", "--max-mamba-cache-size", "8"), 2,
         "--max-mamba-cache-size: is SGLang's; vLLM does not have it"),
    ],
)  # fmt: skip
def test_refusals_and_usage_errors(args: tuple[str, ...], code: int, message: str) -> None:
    r = kv(*args)
    assert r.exit_code == code and message in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1
