"""`kvplan explain` on llama.cpp logs of a model placed on devices (kvplan/analysis/explain_devices.py): llama.cpp's
own llama-completion loading the real Gemma 3 270M onto one to three ggml RPC servers acting as GPUs
(scripts/oracle/record_device_logs.py → tests/fixtures/logs/llamacpp/devices/): every model, KV and compute
buffer of every device and of the host, and llama.cpp's fit (its default `--fit on`), against kvplan's placement
and its port of the fit."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest
from helpers import FIXTURES, kv
from hypothesis import given, settings
from hypothesis import strategies as st

from kvplan.analysis.explain import explain_llamacpp
from kvplan.analysis.explain_devices import device_of
from kvplan.model import ModelDescription
from kvplan.sources import load_model
from kvplan.sources.llamacpp_log import LlamaCppLog, read_server_log

LOGS = FIXTURES / "logs" / "llamacpp" / "devices"
INDEX = json.loads((LOGS / "index.json").read_text())["logs"]
#: the one log kvplan cannot account for, and why: -ot moves tensors the log does not list at -lv 4
NOT_EXPLAINED = {"gemma-3-270m-rpc2-ot-ffn-cpu.log"}


@cache
def _gemma_path() -> str:
    import tempfile

    from gguf_files import gemma_270m_sparse

    return str(gemma_270m_sparse(Path(tempfile.mkdtemp()) / "gemma-3-270m-q4_k_m.gguf"))


@pytest.fixture(scope="module")
def gemma() -> ModelDescription:
    return load_model(_gemma_path())


def _log(name: str) -> LlamaCppLog:
    log = read_server_log(str(LOGS / name))
    assert isinstance(log, LlamaCppLog) and log.devices
    return log


@pytest.mark.parametrize("name", sorted(set(INDEX) - NOT_EXPLAINED))
def test_every_buffer_on_every_device_is_explained(name: str, gemma: ModelDescription) -> None:
    log = _log(name)
    e = explain_llamacpp(log, gemma)
    assert e.explained, [(f.what, f.logged, f.kvplan, f.why) for f in e.figures if not f.equal]
    buffers = [b for b in log.buffers if b.kind in ("model", "KV", "compute") and b.buffer != "CPU_REPACK"]
    whats = [f.what for f in e.figures]
    assert sum(1 for w in whats if w.endswith(("model buffer, MiB", "KV buffer, MiB", "compute buffer, MiB"))) == len(
        buffers
    )
    assert [d.free_mib for d in log.devices] == INDEX[name]["devices_free_mib"]
    assert any(w.startswith("llama.cpp's fit") for w in whats)  # (--fit on is llama.cpp's default)


def test_the_fit_lowering_the_context_and_moving_layers_is_kvplans_fit(gemma: ModelDescription) -> None:
    """1,700 MiB and no -c: llama.cpp's fit lowers the context from 32,768 to 4,096 and still cannot keep 1 GiB
    free with a layer on the device (the output layer's 512 MiB of logits go with it): -ngl 0. With -c 0 the
    context stays (fit_params_min_ctx = UINT32_MAX) and the layers move."""
    lowered = explain_llamacpp(_log("gemma-3-270m-rpc1-fit-lowers-ctx.log"), gemma)
    fit = next(f for f in lowered.figures if f.what.startswith("llama.cpp's fit"))
    assert (fit.logged, fit.kvplan, fit.equal) == ("-c 4096 -ngl 0", "-c 4096 -ngl 0", True)
    assert "context lowered" in fit.why
    kept = explain_llamacpp(_log("gemma-3-270m-rpc1-fit-full-ctx-asked.log"), gemma)
    fit = next(f for f in kept.figures if f.what.startswith("llama.cpp's fit"))
    assert (fit.logged, fit.equal) == ("-c 32768 -ngl 0", True)


def test_the_default_split_and_a_split_the_log_does_not_print(gemma: ModelDescription) -> None:
    """2,000 + 1,000 MiB: llama.cpp splits the 19 layers 13 + 6 by free memory; with -ts 1,1 (not printed) the
    split whose weights give the printed model buffers is found and said."""
    default = explain_llamacpp(_log("gemma-3-270m-rpc2-default-split.log"), gemma)
    model = [f for f in default.figures if f.what.endswith("model buffer, MiB")]
    assert [f.logged for f in model] == ["170.00", "46.49", "188.67"] and all("default split" in f.why for f in model)
    even = explain_llamacpp(_log("gemma-3-270m-rpc2-ts-1-1.log"), gemma)
    found = next(f for f in even.figures if f.what.endswith("model buffer, MiB") and f.what.startswith("RPC"))
    assert "the log prints no -ts" in found.why and even.explained


def test_an_rpc_servers_buffers_are_named_by_its_endpoint() -> None:
    log = _log("gemma-3-270m-rpc2-default-split.log")
    first, second = log.devices
    assert (first.name, second.name) == ("RPC0", "RPC1")
    assert device_of(log, f"RPC0[{second.description}]") == 1 and device_of(log, "CPU_Mapped") == -1
    assert device_of(log, "RPC0[10.0.0.1:1]") is None
    assert device_of(log, "CUDA_Host") == -1  # (a CUDA build's host compute buffer is the host's)


def test_tensors_moved_by_an_unlisted_ot_are_not_explained_and_say_why(gemma: ModelDescription) -> None:
    e = explain_llamacpp(_log("gemma-3-270m-rpc2-ot-ffn-cpu.log"), gemma)
    wrong = [f for f in e.figures if not f.equal]
    assert wrong and any("-ot" in f.why for f in wrong)


def test_the_cli_explains_a_device_log(gemma: ModelDescription) -> None:
    path = str(LOGS / "gemma-3-270m-rpc3-ts-3-2-1.log")
    r = kv("explain", path, "-m", gemma.source, "-o", "json")
    assert r.exit_code == 0, r.stderr
    figures = r.json()["figures"]
    assert sum(1 for f in figures if f["figure"].endswith("compute buffer, MiB")) == 4  # three devices + host
    assert all(isinstance(f["kvplan_bytes"], int) for f in figures if f["figure"].endswith("MiB"))


def test_the_index_lists_every_log() -> None:
    assert {p.name for p in Path(LOGS).glob("*.log")} == set(INDEX)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["CUDA0", "RPC0", "RPC1", "Vulkan0", "X"]), st.integers(0, 1 << 40)),
             max_size=4),
    st.integers(0, 1 << 20),
    st.text(max_size=60),
)  # fmt: skip
def test_any_devices_a_log_names_end_in_a_documented_exit(devices: list[tuple[str, int]], ngl: int, junk: str) -> None:
    """Devices of any size, an offload count out of range, a fit that says anything: an answer or one line."""
    import tempfile

    base = (LOGS / "gemma-3-270m-rpc2-default-split.log").read_text()
    head = "".join(f"llama_prepare_model_devices: using device {n} (127.0.0.1:{i}) - {m} MiB free\n"
                   for i, (n, m) in enumerate(devices))  # fmt: skip
    text = base.replace("load_tensors: offloaded 19/19", f"load_tensors: offloaded {ngl}/19")
    text = text.replace("print_info: file format", f"common_fit_params: failed to fit params to free device memory: "
                        f"{junk}\nprint_info: file format", 1) + head  # fmt: skip
    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as fh:
        fh.write(text)
    r = kv("explain", fh.name, "-m", _gemma_path())
    assert r.exit_code in (0, 1, 3), r.stderr  # (2 would be a usage error: the model is given)
    if r.exit_code >= 2:
        assert r.stderr.count("\n") == 1 and r.stderr.startswith("kvplan: error:")


def test_a_split_is_searched_by_prefix_sums_over_many_devices(gemma: ModelDescription) -> None:
    """Five devices and model buffers no whole-layer split gives (the -ot log with three more devices): every
    split of the 19 layers over five devices is tried (8,855), each by a few additions, and the answer says why
    none fits rather than stalling."""
    base = (LOGS / "gemma-3-270m-rpc2-ot-ffn-cpu.log").read_text()
    extra = "".join(f"llama_prepare_model_devices: using device RPC{i} (127.0.0.1:{9000 + i}) (unknown id) - "
                    "2000 MiB free\n" for i in range(2, 5))  # fmt: skip
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as fh:
        fh.write(base + extra)
    log = read_server_log(fh.name)
    assert isinstance(log, LlamaCppLog) and len(log.devices) == 5
    e = explain_llamacpp(log, gemma)
    model = [f for f in e.figures if f.what.endswith("model buffer, MiB") and not f.equal]
    assert model and all("no split of whole layers" in f.why for f in model)
