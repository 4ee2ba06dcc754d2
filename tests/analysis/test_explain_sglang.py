"""`kvplan explain` on SGLang startup logs (kvplan/sources/sglang_log.py, kvplan/analysis/explain_sglang.py): the
pool lines SGLang 0.5.23's own code logs for recorded sizing cases (tests/fixtures/logs/sglang/recorded/), the
excerpts users pasted into public issues (each with its URL), hand-worked figures, what the reader takes from
SGLang's lines; hostile text and settings never raise."""

from __future__ import annotations

import json

import pytest
from helpers import FIXTURES, gpu_facts, kv
from hypothesis import given, settings
from hypothesis import strategies as st

from kvplan.analysis.explain_sglang import explain_sglang
from kvplan.analysis.explain_vllm import engine_model_for
from kvplan.errors import BadInputError
from kvplan.sources import load_model
from kvplan.sources.llamacpp_log import read_server_log
from kvplan.sources.sglang_log import SglangLog, take

LOGS = FIXTURES / "logs" / "sglang"
RECORDED = LOGS / "recorded"
RECORDED_INDEX = json.loads((RECORDED / "index.json").read_text())
PUBLIC_INDEX = json.loads((LOGS / "index.json").read_text())["logs"]
#: SGLang's generic fallback class: it sizes every layer as attention, so kvplan refuses to call that SGLang's plan
FALLBACK = "TransformersForCausalLM"


def _parse(text: str) -> SglangLog:
    log = SglangLog()
    for line in text.splitlines():
        log = take(log, line)
    return log


def _recorded(name: str) -> tuple[dict[str, object], SglangLog]:
    entry = RECORDED_INDEX["logs"][name]
    log = read_server_log(str(RECORDED / name))
    assert isinstance(log, SglangLog) and log.runs == 1
    return entry, log


@pytest.mark.parametrize(
    "name", sorted(n for n, e in RECORDED_INDEX["logs"].items() if e["sglang"]["model_class"] != FALLBACK)
)
def test_every_log_sglang_wrote_is_explained(name: str) -> None:
    """SGLang's own pool lines (its pool classes on the meta device, its argument dump) for a recorded sizing
    case: kvplan reads the settings, finds the model where the log loaded it, and explains every figure — the
    pools' K and V sizes from their tokens, the tokens from the free memory, and what follows from them."""
    entry, log = _recorded(name)
    case, answer = entry["case"], entry["sglang"]
    assert isinstance(case, dict) and isinstance(answer, dict)
    model = engine_model_for(log.model, name, None)  # the config folder the log names, relative to the repository
    e = explain_sglang(log, model, gpu_facts(case["gpu"]["preset"]), False)
    assert e.explained, [(f.what, f.logged, f.kvplan, f.why) for f in e.figures if not f.equal]
    whats = {f.what for f in e.figures}
    assert {"max_total_num_tokens (from the free memory)", "context_len", "max_running_requests"} <= whats
    assert any("size, GB" in w for w in whats) or answer["max_total_num_tokens"] == answer["context_len"]
    assert log.max_total_tokens == answer["max_total_num_tokens"]
    assert e.mem_fraction_static == answer["mem_fraction_static"] and e.page_size == answer["page_size"]


@pytest.mark.parametrize(
    "name", sorted(n for n, e in RECORDED_INDEX["logs"].items() if e["sglang"]["model_class"] == FALLBACK)
)
def test_a_model_sglang_runs_through_its_generic_class_is_refused_with_the_reason(name: str) -> None:
    _, log = _recorded(name)
    with pytest.raises(BadInputError, match="no model class"):
        explain_sglang(log, engine_model_for(log.model, name, None), gpu_facts("H100-80GB"), False)


def test_the_recorded_logs_cover_the_families() -> None:
    logs = RECORDED_INDEX["logs"]
    assert RECORDED_INDEX["sglang"] == "0.5.23" and len(logs) >= 50
    models = {e["case"]["model"] for e in logs.values()}
    assert len(models) >= 20
    assert {"gpt-oss-20b", "deepseek-v3", "deepseek-v3.2-exp", "qwen3-next-80b-a3b", "falcon-mamba-7b"} <= models
    kinds = {k for e in logs.values() for k in e["case"] if e["case"][k] is not None}
    assert {"tp_size", "page_size", "disable_radix_cache", "context_length", "mem_fraction_static",
            "kv_cache_dtype"} <= kinds  # fmt: skip


def test_hand_worked_llama_3_1_8b() -> None:
    """32 layers × 8 KV heads × 128 × 2 B = 64 KiB of K a token; 417,669 tokens + 1 padding row = 25.49 GB of K.
    The pools get 64.50 − 79.50 × (1 − 0.83) = 50.985 GB ÷ 128 KiB a token ≈ 417,669 tokens; a request of 131,072
    tokens: 417,669 ÷ 131,072 × 512 = 1,631, raised to 2,048 running requests."""
    _, log = _recorded("19-llama-3.1-8b-A100-80GB.log")
    e = explain_sglang(log, load_model("llama-3.1-8b"), gpu_facts("A100-80GB"), False)
    by = {f.what: f for f in e.figures}
    k = by["KV pool: K size, GB"]
    assert k.logged == "25.49" and k.kvplan_bytes == 417_670 * 65_536
    assert by["max_total_num_tokens (from the free memory)"].kvplan == "417,669"
    assert by["max_running_requests"].kvplan == "2,048" and e.token_bytes == 131_072
    fp8 = next(c for c in e.changes if c.flags.startswith("--kv-cache-dtype"))
    assert fp8.tokens == 2 * 417_669


def test_mla_and_the_dsa_indexer_are_one_kv_size() -> None:
    """DeepSeek-V3.2's pool line counts its 61 layers' 576-value latent and 132-byte indexer row: 61 × (1,152 +
    132) = 78,324 B a token, in pages of 64 (the padding is a page)."""
    name = next(n for n in RECORDED_INDEX["logs"] if "deepseek-v3.2-exp" in n)
    entry, log = _recorded(name)
    e = explain_sglang(log, engine_model_for(log.model, name, None), gpu_facts(entry["case"]["gpu"]["preset"]), False)
    kv_size = next(f for f in e.figures if f.what == "KV pool: KV size, GB")
    assert e.token_bytes == 78_324 and e.page_size == 64 and kv_size.equal
    assert kv_size.kvplan_bytes == (log.pools[0].tokens + 64) * 78_324


def test_a_hybrid_mamba_pool_is_explained_slot_by_slot() -> None:
    """Qwen3-Next: a whole state slot more leaves fewer tokens, so the free memory's rounding allows two ranges."""
    _, log = _recorded("08-qwen3-next-80b-a3b-A100-80GB-tp_size=8.log")
    e = explain_sglang(log, engine_model_for(log.model, "x", None), gpu_facts("A100-80GB"), False)
    by = {f.what: f for f in e.figures}
    assert by["max_mamba_cache_size"].equal and log.mamba_slots == 2_421
    assert by["max_running_requests"].logged == "484" and "state slots" in by["max_running_requests"].why
    assert by["max_total_num_tokens (from the free memory)"].why.count("–") == 2


@pytest.mark.parametrize("name", sorted(PUBLIC_INDEX))
def test_every_public_log_is_explained_as_its_index_says(name: str) -> None:
    entry = PUBLIC_INDEX[name]
    log = read_server_log(str(LOGS / name))
    assert isinstance(log, SglangLog)
    e = explain_sglang(log, load_model(entry["model"]), gpu_facts(entry["gpu"]), False)
    assert [f.equal for f in e.figures] == entry["equal"], [(f.what, f.logged, f.kvplan, f.why) for f in e.figures]
    for f in e.figures:
        assert f.why and f.why.startswith("not explained") is not f.equal


def test_the_public_logs_say_where_they_came_from() -> None:
    assert set(LOGS.glob("*.log")) == {LOGS / n for n in PUBLIC_INDEX}
    assert all(e["url"].startswith("https://github.com/") for e in PUBLIC_INDEX.values())


def test_the_reader_takes_sglangs_own_lines() -> None:
    log = _parse(
        "$ python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp 2 --mem-fraction-static=0.85 \\\n"
        "[2025-07-01 10:00:00 TP1] KV Cache is allocated. #tokens: 9, K size: 1.00 GB, V size: 1.00 GB\n"
        "\x1b[32m[2025-07-01 10:00:00 TP0] Load weight begin. avail mem=78.81 GB\x1b[0m\n"
        "[2025-07-01 10:00:01 TP0] Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=71.10 GB, "
        "mem usage=7.71 GB.\n"
        "[2025-07-01 10:00:01 TP0] KV Cache is allocated. #tokens: 473000, K size: 32.48 GB, V size: 32.48 GB\n"
        "[2025-07-01 10:00:02 TP0] max_total_num_tokens=473000, chunked_prefill_size=8192, max_prefill_tokens=16384, "
        "max_running_requests=3694, context_len=40960, available_gpu_mem=4.56 GB\n"
    )
    assert log.command == {"model_path": "Qwen/Qwen3-8B", "tp_size": "2", "mem_fraction_static": "0.85"}
    assert log.model == "Qwen/Qwen3-8B" and log.setting("tp_size") == "2"
    assert [p.tokens for p in log.pools] == [473_000]  # rank 1's line is not rank 0's
    assert (log.load_begin_gb, log.load_end_gb, log.weights_gb) == ("78.81", "71.10", "7.71")
    assert (log.max_total_tokens, log.max_running_requests, log.context_len) == (473_000, 3_694, 40_960)


def test_both_server_args_spellings_and_a_second_run() -> None:
    old = "server_args=ServerArgs(model_path='a/b', tp_size=4, mem_fraction_static=0.9, context_length=None)\n"
    new = "server_args={'model_path': 'c/d', 'tp_size': 2, 'kv_cache_dtype': 'fp8_e4m3', 'page_size': 16}\n"
    tokens = "KV Cache is allocated. #tokens: 100, KV size: 1.00 GB\n"
    log = _parse(old + tokens)
    assert log.args == {"model_path": "a/b", "tp_size": "4", "mem_fraction_static": "0.9", "context_length": "None"}
    assert log.setting("context_length") is None and log.pools[0].kv_gb == "1.00"
    log = _parse(old + tokens + new + tokens)
    assert log.runs == 2 and log.model == "c/d" and log.setting("kv_cache_dtype") == "fp8_e4m3"
    assert len(log.pools) == 1


def test_the_cli_explains_an_sglang_log_in_every_format() -> None:
    path = str(RECORDED / "21-gpt-oss-20b-A100-80GB.log")
    r = kv("explain", path, "--gpu", "A100-80GB")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith("SGLang log: all 8 figures equal") and "SWA KV pool: K size, GB" in r.stdout
    data = kv("explain", path, "--gpu", "A100-80GB", "-o", "json").json()
    assert data["runtime"] == "sglang" and data["explained"] is True and data["settings"]["mem_fraction_static"] == 0.83
    assert data["log"]["swa_layer_tokens"] == 1_028_866 and isinstance(data["token_bytes"], int)
    for fmt in ("markdown", "csv"):
        assert kv("explain", path, "--gpu", "A100-80GB", "-o", fmt).exit_code == 0


def test_a_log_that_states_no_figure_or_an_unknown_model_says_why(tmp_path: object) -> None:
    import pathlib

    folder = pathlib.Path(str(tmp_path))
    (folder / "a.log").write_text("server_args={'model_path': 'nobody/unknown-model'}\nmax_total_num_tokens=5, "
                                  "chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=2, "
                                  "context_len=4096\n")  # fmt: skip
    r = kv("explain", str(folder / "a.log"))
    assert r.exit_code == 2 and "not in the catalog" in r.stderr and r.stderr.count("\n") == 1


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_any_text_reads_without_raising(text: str) -> None:
    log = _parse(text + "\nKV Cache is allocated. #tokens: 1" + text + "\nserver_args={'tp_size': " + text)
    assert isinstance(log, SglangLog)


_VALUES = st.one_of(st.integers(-(1 << 70), 1 << 70), st.floats(allow_nan=True), st.text(max_size=12), st.booleans(),
                    st.none())  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.sampled_from(["tp_size", "pp_size", "mem_fraction_static", "context_length",
                                        "kv_cache_dtype", "page_size", "max_running_requests", "disable_radix_cache"]),
                       _VALUES, max_size=4),
       st.integers(0, 1 << 50), st.floats(allow_nan=True, allow_infinity=True))  # fmt: skip
def test_any_settings_a_log_states_end_in_a_documented_exit(args: dict[str, object], tokens: int, gb: float) -> None:
    """Whatever a log's server_args say, explain answers or says why in one line: exit 0, 1, 2 or 3."""
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as fh:
        fh.write(f"server_args={args!r}\nLoad weight begin. avail mem={abs(gb):.2f} GB\n"
                 f"Load weight end. type=X, avail mem={abs(gb) / 2:.2f} GB, mem usage=1.00 GB.\n"
                 f"KV Cache is allocated. #tokens: {tokens}, K size: 1.00 GB, V size: 1.00 GB\n")  # fmt: skip
    r = kv("explain", fh.name, "-m", "llama-3.1-8b")
    assert r.exit_code in (0, 1, 2, 3), r.stderr
    if r.exit_code >= 2:
        assert r.stderr.count("\n") == 1 and r.stderr.startswith("kvplan: error:")


def test_an_80_column_terminal_gets_every_line_within_80_columns() -> None:
    """The figures stack on a narrow terminal; their long rules wrap at words under their first line."""
    r = kv("explain", str(RECORDED / "08-qwen3-next-80b-a3b-A100-80GB-tp_size=8.log"), width=80)
    lines = [line for line in r.stdout.splitlines() if " " in line.strip()]  # (a path is one word: never cut)
    assert r.exit_code == 0 and max(len(line) for line in lines) <= 80
    assert "     Why: " in r.stdout and "\n          " in r.stdout  # (a continuation under the first line)


def test_an_sglang_log_is_not_a_llama_cpp_log() -> None:
    from kvplan.sources.llamacpp_log import read_log

    with pytest.raises(BadInputError, match=r"an SGLang log, not a llama\.cpp startup log"):
        read_log(str(RECORDED / "19-llama-3.1-8b-A100-80GB.log"))
