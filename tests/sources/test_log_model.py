"""The model a llama.cpp log loaded, from the log alone (kvplan/sources/log_model.py): on every startup log llama.cpp
itself wrote here (the real Gemma 3 270M on the CPU and on RPC devices; the oracle harness's test models of 11 more
architectures: MLA, sinks, recurrent and hybrid memory), the model read back from the loader's metadata dump gives
every context, KV and state figure the log prints — the same figures, equal, as the model file gives; what needs
the file's tensors (model and compute buffers) is named as such. A per-layer array the loader cuts is taken from
print_info; a value the model needs that the log cuts is one clear error."""

from __future__ import annotations

import json

import pytest
from graph_cases import REAL, model_of
from helpers import FIXTURES

from kvplan.analysis.explain import explain_llamacpp
from kvplan.errors import BadInputError
from kvplan.sources.llamacpp_log import parse_lines, read_log
from kvplan.sources.log_model import metadata_of, model_from_log
from kvplan.sources.values import ArrayValue

LOGS = FIXTURES / "logs" / "llamacpp"
INDEX = json.loads((LOGS / "index.json").read_text())["logs"]
RECORDED = sorted([*INDEX, *(f"devices/{p.name}" for p in (LOGS / "devices").glob("*.log"))])
NEEDS_FILE = "not explained: the model file's tensors decide it, and the log does not list them (give -m FILE)"


def _file_model(name: str) -> object:
    return model_of(INDEX[name]["model"]) if name.startswith("harness/") else model_of(REAL)


@pytest.mark.parametrize("name", RECORDED)
def test_the_log_alone_explains_every_context_kv_and_state_figure(name: str) -> None:
    log = read_log(str(LOGS / name))
    from_log = model_from_log(log, name)
    e = explain_llamacpp(log, from_log)
    buffers = [f for f in e.figures if f.what.endswith(("model buffer, MiB", "compute buffer, MiB"))]
    rest = [f for f in e.figures if f not in buffers]
    assert rest and all(f.equal for f in rest), [(f.what, f.logged, f.kvplan) for f in rest if not f.equal]
    assert buffers and all(f.why == NEEDS_FILE and not f.equal for f in buffers)
    assert any("metadata dump" in n for n in e.notes)
    # the same figures the model file gives, equal there too
    with_file = {f.what: f for f in explain_llamacpp(log, _file_model(name)).figures}  # type: ignore[arg-type]
    for f in rest:
        assert with_file[f.what].kvplan == f.kvplan and with_file[f.what].kvplan_bytes == f.kvplan_bytes


@pytest.mark.parametrize("name", sorted(INDEX))
def test_the_model_from_the_log_is_the_files_model(name: str) -> None:
    log = read_log(str(LOGS / name))
    mine, file = model_from_log(log, name), _file_model(name)
    for field in ("arch", "n_layer_all", "n_embd", "n_ctx_train", "layers", "swa_type", "n_swa", "mla", "memory"):
        assert getattr(mine, field) == getattr(file, field), field
    assert mine.source_kind == "log" and mine.tensor_weights is None


def test_the_recorded_logs_cover_twelve_architectures() -> None:
    archs = {model_from_log(read_log(str(LOGS / n)), n).arch for n in RECORDED}
    assert len(archs) >= 12 and {"gemma3", "deepseek2", "qwen3next", "granitehybrid", "mamba2"} <= archs


def _cut(text: str, key: str) -> str:
    """The log as the loader prints a long model's array: cut to 40 characters, ending in "..."."""
    out = []
    for line in text.splitlines():
        if f" {key} arr[" in line:
            head, _, _value = line.partition("= ")
            line = f"{head}= [2, 0, ..."
        out.append(line)
    return "\n".join(out)


def test_a_per_layer_array_the_loader_cuts_is_taken_from_print_info() -> None:
    text = (LOGS / "harness" / "granitehybrid-dense-c4096.log").read_text()
    whole = parse_lines(text.splitlines())
    cut = parse_lines(_cut(text, "granitehybrid.attention.head_count_kv").splitlines())
    value = metadata_of(cut, "x")[0]["granitehybrid.attention.head_count_kv"]
    assert isinstance(value, ArrayValue) and value.values == (2, 0)  # print_info: n_head_kv = [2, 0]
    assert model_from_log(cut, "x").layers == model_from_log(whole, "x").layers
    no_print_info = parse_lines([ln for ln in _cut(text, "granitehybrid.attention.head_count_kv").splitlines()
                                 if "print_info: n_head_kv" not in ln])  # fmt: skip
    with pytest.raises(BadInputError, match=r"head_count_kv.*cut to 40 characters; give the model with -m"):
        model_from_log(no_print_info, "x")


def test_a_log_without_a_metadata_dump_or_with_a_bad_value_is_one_error() -> None:
    text = (LOGS / "gemma-3-270m-np4.log").read_text().splitlines()
    with pytest.raises(BadInputError, match="no metadata dump of its model"):
        model_from_log(parse_lines([ln for ln in text if "- kv" not in ln]), "x")
    bad = [ln.replace("u32              = 18", "u32              = eighteen") for ln in text]
    with pytest.raises(BadInputError, match=r"gemma3.block_count \(u32\) reads 'eighteen'"):
        model_from_log(parse_lines(bad), "x")


def test_the_dump_of_the_last_run_is_kept() -> None:
    first = (LOGS / "harness" / "llama-dense-c4096.log").read_text()
    last = (LOGS / "gemma-3-270m-np4.log").read_text()
    log = parse_lines((first + "\n" + last).splitlines())
    assert log.runs == 2 and model_from_log(log, "x").arch == "gemma3"
