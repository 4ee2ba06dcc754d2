"""`kvplan explain` on vLLM startup logs (kvplan/sources/vllm_log.py, kvplan/analysis/explain_vllm.py): the excerpts
users pasted into public issues (tests/fixtures/logs/vllm/, each with its URL), every figure against kvplan's port of
vLLM's planner, hand-worked; what the reader takes from vLLM's lines; hostile text never raises."""

from __future__ import annotations

import json

import pytest
from helpers import FIXTURES, gpu_facts, kv
from hypothesis import given, settings
from hypothesis import strategies as st

from kvplan.analysis.explain_vllm import _capacity, engine_model_for, explain_vllm
from kvplan.errors import BadInputError, UsageError
from kvplan.sources import load_model
from kvplan.sources.llamacpp_log import read_log, read_server_log
from kvplan.sources.vllm_log import VllmLog, take

LOGS = FIXTURES / "logs" / "vllm"
INDEX = json.loads((LOGS / "index.json").read_text())["logs"]


def _parse(text: str) -> VllmLog:
    log = VllmLog()
    for line in text.splitlines():
        log = take(log, line)
    return log


@pytest.mark.parametrize("name", sorted(INDEX))
def test_every_public_log_is_explained_as_its_index_says(name: str) -> None:
    entry = INDEX[name]
    log = read_server_log(str(LOGS / name))
    assert isinstance(log, VllmLog)
    e = explain_vllm(log, load_model(entry["model"]), gpu_facts(entry["gpu"]), False)
    assert len(e.figures) == entry["figures"] and e.explained is entry["explained"]
    for f in e.figures:
        assert f.why and f.why.startswith("not explained") is not f.equal


def test_the_fixtures_cover_v0_v1_refusals_and_parallelism() -> None:
    assert set(LOGS.glob("*.log")) == {LOGS / n for n in INDEX}
    assert len(INDEX) >= 5 and all(e["url"].startswith("https://github.com/") for e in INDEX.values())


def test_hand_worked_llama_3_1_8b_on_a_3090() -> None:
    """32 layers × (K + V) 8 heads × 128 × 2 B = 128 KiB a token, 2 MiB a block of 16: 1,952 blocks are 3.8125 GiB
    (vLLM prints 3.81), hold 31,232 tokens, and a 20,000-token request takes ⌈20,000 / 16⌉ = 1,250 blocks:
    1,952 / 1,250 = 1.5616 → 1.56x."""
    log = read_server_log(str(LOGS / "issue-10517-llama-3.1-8b-20k.log"))
    assert isinstance(log, VllmLog)
    e = explain_vllm(log, load_model("llama-3.1-8b"), gpu_facts("RTX-3090"), False)
    assert (e.blocks, e.block_bytes, e.budget_bytes, e.tokens) == (1952, 2 << 20, 1952 * (2 << 20), 31_232)
    by = {f.what: f for f in e.figures}
    assert by["Available KV cache memory, GiB"].kvplan_bytes == 4_093_640_704
    assert by["Maximum concurrency for 20,000 tokens per request"].why == (
        "1,952 blocks ÷ 1,250 blocks a request of 20,000 tokens takes"
    )
    changes = {c.flags: c for c in e.changes}
    assert changes["--kv-cache-dtype fp8"].tokens == 62_464  # twice the blocks
    # the memory profile's 23.58 GiB × 0.05 more: 1.179 GiB, 603 blocks more
    assert changes["--gpu-memory-utilization 0.95"].tokens == 40_880


def test_the_refused_max_seq_len_is_the_block_arithmetic() -> None:
    log = read_server_log(str(LOGS / "issue-10517-llama-3.1-8b-29k.log"))
    assert isinstance(log, VllmLog) and (log.refused_len, log.stored_tokens, log.gpu_blocks) == (29000, 23648, 1478)
    e = explain_vllm(log, load_model("llama-3.1-8b"), gpu_facts("RTX-3090"), False)
    assert e.explained and e.blocks == 1478
    # vLLM 0.33 keeps one block as its null block, so one request fits 1,477 × 16 = 23,632 tokens (V0: 23,648)
    assert {c.flags for c in e.changes} >= {"--max-model-len 23632 (the longest that fits)"}


def test_a_tensor_parallel_log_holds_the_smallest_gpus_block_count() -> None:
    """vllm#21348 (TP 4): 11,180 blocks take 8.02 GiB where rank 0 printed 8.11 available — vLLM gives every
    worker the smallest count any holds (get_kv_cache_configs), so another GPU had less; a printed memory too small
    for the blocks stays not explained."""
    log = read_server_log(str(LOGS / "issue-21348-qwen3-235b-a22b-fp8.log"))
    assert isinstance(log, VllmLog) and log.setting("tensor_parallel_size") == "4"
    e = explain_vllm(log, load_model("qwen3-235b-a22b"), gpu_facts("H100-80GB"), False)
    by = {f.what: f for f in e.figures}
    assert by["GPU KV cache size, tokens"].equal and e.blocks == 11_180 and e.block_bytes == 770_048
    memory = by["Available KV cache memory, GiB"]
    assert memory.equal and e.explained
    assert "smallest block count any of them holds" in memory.why and "another GPU had 8.0179–8.0186 GiB" in memory.why
    text = (LOGS / "issue-21348-qwen3-235b-a22b-fp8.log").read_text().replace("memory: 8.11 GiB", "memory: 7.90 GiB")
    short = _parse(text)
    assert isinstance(short, VllmLog)
    low = {f.what: f for f in explain_vllm(short, load_model("qwen3-235b-a22b"), gpu_facts("H100-80GB"), False).figures}
    assert not low["Available KV cache memory, GiB"].equal
    assert low["Available KV cache memory, GiB"].why.startswith("not explained: 11,180 blocks take 8.0179–8.0186 GiB")


def test_a_v1_log_reads_its_settings_from_vllms_own_lines() -> None:
    text = """
(APIServer pid=1) INFO 07-06 22:50:30 [api_server.py:1] vLLM API server version 0.33.0
(APIServer pid=1) INFO 07-06 22:50:34 [api_utils.py:273] non-default args: {'model_tag': 'meta-llama/Llama-3.1-8B-Instruct', 'model': 'meta-llama/Llama-3.1-8B-Instruct', 'max_model_len': 32768, 'kv_cache_dtype': 'fp8', 'gpu_memory_utilization': 0.9, 'enable_prefix_caching': True}
(EngineCore pid=107) INFO 07-06 22:50:46 [core.py:114] Initializing a V1 LLM engine (v0.33.0) with config: model='meta-llama/Llama-3.1-8B-Instruct', speculative_config=None, dtype=torch.bfloat16, max_seq_len=32768, tensor_parallel_size=1, pipeline_parallel_size=1, quantization=None, kv_cache_dtype=fp8, enable_prefix_caching=True
(EngineCore pid=107) INFO 07-06 22:52:09 [gpu_worker.py:508] Available KV cache memory: 5.98 GiB
(EngineCore pid=107) INFO 07-06 22:52:09 [kv_cache_utils.py:2146] GPU KV cache size: 97,968 tokens, Maximum concurrency for 32,768 tokens per request: 2.99x
"""  # noqa: E501
    log = _parse(text)
    assert (log.version, log.model, log.kv_tokens, log.concurrency, log.concurrency_len, log.runs) == (
        "0.33.0", "meta-llama/Llama-3.1-8B-Instruct", 97_968, "2.99", 32_768, 1
    )  # fmt: skip
    assert log.setting("kv_cache_dtype") == "fp8" and log.setting("max_model_len") == "32768"
    model = engine_model_for(log.model, "x.log", None)
    assert model.name == "llama-3.1-8b"
    e = explain_vllm(log, model, gpu_facts("H100-80GB"), True)
    # fp8: 64 KiB a token, 1 MiB a block: 5.98 GiB holds 6,123 blocks; 6,123 ÷ 2,048 = 2.9897
    assert e.explained and e.blocks == 6_123 and e.block_bytes == 1 << 20
    assert any("planned for H100-80GB (pass --gpu)" in n for n in e.notes)


def test_a_second_run_replaces_the_first() -> None:
    one = "INFO vLLM API server version 0.10.1\nINFO GPU KV cache size: 1,000 tokens\n"
    log = _parse(one + one.replace("1,000", "2,000"))
    assert (log.runs, log.kv_tokens) == (2, 2000)


def test_a_pasted_command_with_line_continuations() -> None:
    pasted = "$ vllm serve Qwen/Qwen3-8B \\\n  --tensor-parallel-size 2 \\\n  --max-model-len=8192 --kv_cache_dtype fp8"
    log = _parse(pasted)
    assert log.command == {"model": "Qwen/Qwen3-8B", "tensor_parallel_size": "2", "max_model_len": "8192",
                           "kv_cache_dtype": "fp8"}  # fmt: skip
    assert log.model == "Qwen/Qwen3-8B"


def test_a_model_the_catalog_lacks_asks_for_m() -> None:
    log = _parse("INFO non-default args: {'model': 'someone/unknown-7b'}\nGPU KV cache size: 10 tokens\n")
    with pytest.raises(UsageError, match=r"not in the catalog; give its config\.json folder"):
        engine_model_for(log.model, "x.log", None)
    with pytest.raises(UsageError, match="names no model"):
        engine_model_for(_parse("GPU KV cache size: 10 tokens\n").model, "x.log", None)


def test_a_vllm_log_is_not_a_llama_cpp_log() -> None:
    with pytest.raises(BadInputError, match=r"a vLLM log, not a llama\.cpp startup log"):
        read_log(str(LOGS / "pr-12569-llama-3.1-70b-w8a8.log"))


def test_the_cli_explains_a_vllm_log_in_every_format() -> None:
    path = str(LOGS / "issue-10517-llama-3.1-8b-20k.log")
    r = kv("explain", path, "-m", "llama-3.1-8b", "--gpu", "RTX-3090", "-o", "json")
    assert r.exit_code == 0
    data = r.json()
    assert data["runtime"] == "vllm" and data["blocks"] == 1952
    assert data["block_bytes"] == 2_097_152 and data["explained"] is True
    for fmt in ("table", "markdown", "csv"):
        assert kv("explain", path, "-m", "llama-3.1-8b", "--gpu", "RTX-3090", "-o", fmt).exit_code == 0
    tp = kv("explain", str(LOGS / "issue-21348-qwen3-235b-a22b-fp8.log"), "-m", "qwen3-235b-a22b")
    assert tp.exit_code == 0 and "all 2 figures equal" in tp.stdout


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_any_text_reads_without_raising(text: str) -> None:
    log = _parse(text + "\nGPU KV cache size: 1,0" + text)
    assert isinstance(log, VllmLog)


RECORDED = LOGS / "recorded"
RECORDED_INDEX = json.loads((RECORDED / "index.json").read_text())["logs"] if (RECORDED / "index.json").exists() else {}


@pytest.mark.parametrize("name", sorted(n for n in RECORDED_INDEX if not n.startswith("r")))
def test_every_log_vllm_wrote_is_explained(name: str) -> None:
    """The startup lines vLLM 0.33.0's own code logs for a recorded planning case (scripts/engines/
    record_vllm_logs.py): non-default args, the engine's config line, the KV memory, the capacity line. kvplan
    reads the settings from them, finds the model where the log served it from, and explains every figure."""
    case = RECORDED_INDEX[name]
    log = read_server_log(str(RECORDED / name))
    assert isinstance(log, VllmLog) and log.version == "0.33.0" and log.runs == 1
    model = engine_model_for(log.model, name, None)  # the config folder the log names, relative to the repository
    e = explain_vllm(log, model, gpu_facts(case["gpu"]["preset"]), False)
    assert e.explained, [(f.what, f.logged, f.kvplan, f.why) for f in e.figures if not f.equal]
    assert {f.what.split(" for ")[0] for f in e.figures} >= {
        "GPU KV cache size, tokens", "Available KV cache memory, GiB", "Maximum concurrency"
    }  # fmt: skip
    budget = case["kv_cache_memory_bytes"]  # the KV memory the case ran with: it holds exactly those blocks
    assert e.budget_bytes is not None and e.budget_bytes <= budget < e.budget_bytes + e.block_bytes


REFUSED = sorted(n for n in RECORDED_INDEX if n.startswith("r"))


@pytest.mark.parametrize("name", REFUSED)
def test_every_refusal_vllm_wrote_is_explained(name: str) -> None:
    """Runs vLLM 0.33.0 refused to start (scripts/engines/record_vllm_logs.py --refusals: its own
    check_enough_kv_cache_memory raising `To serve at least one request …`): the KV memory one request of the
    max seq len needs, to vLLM's two decimals, and vLLM's estimate of the longest context that fits within the
    range of every memory that prints as the log's; kvplan's suggested --max-model-len is vLLM's estimate."""
    case = RECORDED_INDEX[name]
    log = read_server_log(str(RECORDED / name))
    assert isinstance(log, VllmLog) and log.needed_gib is not None and log.kv_tokens is None
    model = engine_model_for(log.model, name, None)
    e = explain_vllm(log, model, gpu_facts(case["gpu"]["preset"]), False)
    assert e.explained, [(f.what, f.logged, f.kvplan, f.why) for f in e.figures if not f.equal]
    by = {f.what.split(" of ")[0].split(" one request")[0]: f for f in e.figures}
    assert set(by) == {"KV cache", "estimated maximum model length"}
    spread = by["estimated maximum model length"].kvplan.replace(",", "").split("–")
    assert int(spread[-1]) - int(spread[0]) < log.refused_len / 20  # the 0.01 GiB vLLM prints, no wider
    # kvplan re-plans with the least KV memory for which vLLM's estimate is the log's: at most the case's, and the
    # case's own memory gives the same longest context (kvplan's suggestion is vLLM's estimate)
    budget = case["kv_cache_memory_bytes"]
    assert e.budget_bytes is not None and budget - e.budget_bytes >= 0
    longest = [c for c in e.changes if c.flags.endswith("(the longest that fits)")]
    assert longest and int(longest[0].flags.split()[1]) == log.estimated_len
    cap = _capacity(model, e.settings, gpu_facts(case["gpu"]["preset"]), budget)
    assert cap.max_context(1, cap.max_model_len) == log.estimated_len


def test_a_refusal_wrapped_over_lines_as_pasted_is_read_whole() -> None:
    """A refusal as a terminal or an issue wraps it (0.10's "models's", older builds' "13.60"): the joined lines
    give the same figures as one line; a refusal cut short gives none and stops joining after five lines."""
    wrapped = ("ValueError: To serve at least one request with the models's max seq len (202752),\n"
               "(13.6 GiB KV cache is needed, which is larger than the available KV cache memory\n"
               "(4.51 GiB). Based on the available memory, the estimated maximum model length is\n"
               "67200. Try increasing gpu_memory_utilization or decreasing max_model_len.\n")  # fmt: skip
    log = _parse(wrapped)
    assert (log.refused_len, log.needed_gib, log.refusal_available_gib, log.estimated_len) == (
        202752, "13.6", "4.51", 67200
    )  # fmt: skip
    assert log.refusal_text == "" and log.found
    quoted = _parse("▎ ValueError: To serve at least one request with the model's max seq len (196608),\n"
                    "▎ 23.25 GiB KV cache is needed, which is larger than the available KV cache memory (22.5 GiB).\n"
                    "▎ Based on the available memory, the estimated maximum model length is 190272.\n")  # fmt: skip
    assert (quoted.refused_len, quoted.needed_gib, quoted.estimated_len) == (196608, "23.25", 190272)
    cut = _parse("To serve at least one request with the model's max seq len (4096),\n" + "noise\n" * 6
                 + "GPU KV cache size: 1,000 tokens\n")  # fmt: skip
    assert cut.needed_gib is None and cut.refusal_text == "" and cut.kv_tokens == 1000


def test_the_recorded_logs_cover_the_families() -> None:
    models = {c["model"] for c in RECORDED_INDEX.values()}
    assert len(RECORDED_INDEX) >= 40 and len(models) >= 25 and len(REFUSED) >= 12
    assert {"gpt-oss-20b", "deepseek-v3", "gemma-3-27b", "qwen3-next-80b-a3b", "jamba-1.5-mini"} <= models


_VALUES = st.one_of(st.integers(-(1 << 70), 1 << 70), st.floats(allow_nan=True), st.text(max_size=12), st.booleans(),
                    st.none())  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.sampled_from(["max_model_len", "tensor_parallel_size", "pipeline_parallel_size",
                                        "kv_cache_dtype", "block_size", "gpu_memory_utilization", "max_num_seqs",
                                        "max_num_batched_tokens", "enable_prefix_caching", "mamba_ssm_cache_dtype"]),
                       _VALUES, max_size=4),
       st.integers(0, 1 << 50))  # fmt: skip
def test_any_settings_a_log_states_end_in_a_documented_exit(args: dict[str, object], tokens: int) -> None:
    """Whatever a log's non-default args say, explain answers or says why in one line: exit 0, 1, 2 or 3."""
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as fh:
        fh.write(f"INFO non-default args: {args!r}\nGPU KV cache size: {tokens:,} tokens\n")
    r = kv("explain", fh.name, "-m", "llama-3.1-8b")
    assert r.exit_code in (0, 1, 2, 3), r.stderr
    if r.exit_code >= 2:
        assert r.stderr.count("\n") == 1 and r.stderr.startswith("kvplan: error:")
