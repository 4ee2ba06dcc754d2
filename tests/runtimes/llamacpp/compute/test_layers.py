"""Shortened graphs (kvplan/runtimes/llamacpp/compute/layers.py): which layers are kept, worked by hand; and every
device's compute buffer from the shortened graph equal to the whole graph's, byte for byte and part for part, on
the fit oracle's full-size models (Q4_K_M's mixed weight types repeat every third layer; gpt-oss's windows every
other layer; Qwen3-Next's attention every fourth: Q8_0, whose types do not multiply the period past MAX_PERIOD;
Gemma 3's period of six needs more than the 48 layers of a 12B to repeat 8 times) over placements that cut the
runs of layers (-ngl, -ncmoe, -ot, two devices, -nkvo) with the RPC devices' rules and CUDA's. The recorded
comparisons with llama.cpp itself (test_compute_graph.py, test_sched.py, tests/capacity/test_fit_oracle.py) run
on the shortened graphs too."""

from __future__ import annotations

from pathlib import Path

import pytest
from fit_projection import projected
from gguf_files import sparse_fit_model

import kvplan
import kvplan.runtimes.llamacpp.compute as compute
from kvplan.model import ModelDescription
from kvplan.runtimes.llamacpp.compute import layers


def test_a_run_keeps_its_first_periods_and_drops_whole_multiples() -> None:
    # one odd first layer, 29 alike, the last: 29 = 5 kept + 24 dropped (a multiple of 12) + the last
    sigs = ["a", *["b"] * 29, "z"]
    assert layers.shortening(sigs)[0] == (0, 1, 2, 3, 4, 5, 30)
    # a period of three (a Q4_K_M's mix) over 45 layers: 15 periods, 3 kept, 12 dropped
    sigs = [*["x", "x", "y"] * 15, "z"]
    assert layers.shortening(sigs)[0] == (*range(9), 45)
    # over 30 layers, 10 periods: fewer than 3 + 12, so every layer is built
    assert layers.shortening([*["x", "x", "y"] * 10, "z"])[0] == tuple(range(31))
    # nothing repeats often enough: every layer
    assert layers.shortening(["a", "b", "a", "b", "a", "b", "c"])[0] == tuple(range(7))
    # the last layer is never dropped, even where it looks like the others
    assert layers.shortening(["a"] * 10)[0][-1] == 9


def test_kept_periods_and_multiples_are_parameters() -> None:
    sigs = ["a", *["b"] * 29, "z"]
    assert layers.shortening(sigs, kept_periods=2, dropped_in=1)[0] == (0, 1, 2, 30)
    assert layers.shortening(sigs, kept_periods=1, dropped_in=2)[0] == (0, 1, 30)


_MODELS = [
    ("llama-3.1-8b", "Q4_K_M"),
    ("llama-3.1-8b", "Q8_0"),
    ("qwen3-30b-a3b", "Q4_K_M"),
    ("gpt-oss-20b", "MXFP4_MOE"),
    ("qwen3-next-80b-a3b", "Q8_0"),
    ("glm-4.5-air", "Q8_0"),
]
_PLACEMENTS = [
    ([24000], ["-c", "8192"]),
    ([4000], ["-c", "8192", "-ngl", "11"]),
    ([12000, 12000], ["-c", "16384", "-ub", "1024"]),
    ([16000, 8000], ["-c", "8192", "-ts", "3,1", "-nkvo"]),
    ([24000], ["-c", "4096", "-ot", r"blk\.(1|2|7)\.ffn_.*=CPU"]),
    ([24000], ["-c", "8192", "-ncmoe", "9"]),
]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], ModelDescription]:
    folder: Path = tmp_path_factory.mktemp("layers")
    return {k: kvplan.load_model(str(sparse_fit_model(folder / f"{k[0]}-{k[1]}.gguf", *k))) for k in _MODELS}


@pytest.mark.parametrize("backend", ["cpu", "cuda"])
@pytest.mark.parametrize("model_key", _MODELS, ids=[f"{m}-{t}" for m, t in _MODELS])
def test_the_shortened_graph_gives_every_device_the_whole_graphs_bytes(
    model_key: tuple[str, str],
    backend: str,
    models: dict[tuple[str, str], ModelDescription],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = models[model_key]
    proven = 0
    real_proven = layers.Probe.proven

    def spy(probe: layers.Probe) -> bool:
        nonlocal proven
        out = real_proven(probe)
        proven += out
        return out

    for devices, args in _PLACEMENTS:
        if "-ncmoe" in args and not model.n_expert:
            continue
        compute._DEVICE_BUFFERS.clear()  # (answers are kept per placement: each side plans its own)
        monkeypatch.setattr(layers.Probe, "proven", spy)
        short = projected(model, devices, args, backend)
        parts = [b.parts for b in _last_buffers(model, devices, args, backend)]
        compute._DEVICE_BUFFERS.clear()
        monkeypatch.setattr(compute, "ATTEMPTS", ())  # the whole graph
        whole = projected(model, devices, args, backend)
        assert short == whole, (devices, args)
        assert parts == [b.parts for b in _last_buffers(model, devices, args, backend)], (devices, args)
        monkeypatch.undo()
    # the comparison is of shortened graphs, each proven by its probe: every model repeats its layers (or its
    # periods of layers) often enough to be planned on three periods of each run
    assert proven


def _last_buffers(
    model: ModelDescription, devices: list[int], args: list[str], backend: str
) -> tuple[compute.ComputeBuffer, ...]:
    """The compute buffers (with what they held at their peak) of the placement projected() makes."""
    seen: list[tuple[compute.ComputeBuffer, ...]] = []
    real = compute.device_compute_buffers

    def keep(*a: object, **k: object) -> tuple[compute.ComputeBuffer, ...] | None:
        out = real(*a, **k)  # type: ignore[arg-type]
        if out is not None:
            seen.append(out)
        return out

    with pytest.MonkeyPatch.context() as mp:  # (the capacity layer imports it from the module at each call)
        mp.setattr(compute, "device_compute_buffers", keep)
        projected(model, devices, args, backend)
    assert seen
    return seen[-1]


def test_a_shortening_that_is_not_the_whole_graphs_is_caught(
    models: dict[tuple[str, str], ModelDescription], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kept too short, a stretch's allocator has not settled: the answer differs from the whole graph's, and the
    probe says so (so kvplan plans more periods instead). GLM-4.5-Air at -c 16384 -ub 1024 on two GPUs with CUDA's
    rules settles only after its second period; Qwen3-Next's hybrid period of four after its first."""
    cases = [
        (("glm-4.5-air", "Q8_0"), [12000, 12000], ["-c", "16384", "-ub", "1024"], "cuda", (2, 1)),
        (("qwen3-next-80b-a3b", "Q8_0"), [24000], ["-c", "8192"], "cpu", (1, 1)),
    ]
    for key, devices, args, backend, attempt in cases:
        compute._DEVICE_BUFFERS.clear()
        monkeypatch.setattr(compute, "ATTEMPTS", ())
        whole = projected(models[key], devices, args, backend)
        said: list[bool] = []
        real_proven = layers.Probe.proven

        def believed(probe: layers.Probe, said: list[bool] = said, real: object = real_proven) -> bool:
            said.append(real(probe))  # type: ignore[operator]
            return True

        compute._DEVICE_BUFFERS.clear()
        monkeypatch.setattr(compute, "ATTEMPTS", (attempt,))
        monkeypatch.setattr(layers.Probe, "proven", believed)
        assert projected(models[key], devices, args, backend) != whole, key
        assert said and not all(said), key
        monkeypatch.undo()
        compute._DEVICE_BUFFERS.clear()


def test_shortening_names_the_stretches_it_shortened() -> None:
    sigs = ["a", *["b"] * 29, "z"]
    assert layers.shortening(sigs) == ((0, 1, 2, 3, 4, 5, 30), (layers.Stretch(1, 1, 29, 5),))
    assert layers.shortening(sigs, 3, dropped_in=1) == ((0, 1, 2, 3, 30), (layers.Stretch(1, 1, 29, 3),))
    assert list(layers.Stretch(1, 2, 10, 3).boundaries) == [1, 3, 5]
