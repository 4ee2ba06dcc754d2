"""The SVG chart: a y-axis title, round ticks in the units asked for, x labels that never overlap, the whole range."""

from __future__ import annotations

import itertools
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from helpers import kv

from kvplan.render.chart import nice_step, thin_labels, y_scale
from kvplan.units import GIB, Units

SVG = "{http://www.w3.org/2000/svg}"


def test_round_ticks() -> None:
    assert [nice_step(s) for s in (10.6, 1.0, 4.7, 230)] == [2.5, 0.2, 1.0, 50]
    unit, size, ticks = y_scale(int(10.61 * GIB), Units.IEC)
    assert (unit, size) == ("GiB", GIB) and ticks == [0, 2.5, 5.0, 7.5, 10.0, 12.5]
    assert y_scale(int(10.61 * GIB), Units.SI)[:2] == ("GB", 10**9)


def test_labels_never_overlap() -> None:
    xs = list(range(1024, 65537, 4096))  # 1k:64k:4k: 16 points

    def fx(x: int) -> float:
        return 100 + (x - xs[0]) / (xs[-1] - xs[0]) * 510

    kept = thin_labels(xs, fx)
    assert kept[0] == xs[0] and kept[-1] == xs[-1]
    spans = [(fx(x) - len(f"{x:,}") * 3.5, fx(x) + len(f"{x:,}") * 3.5) for x in kept]
    assert all(a[1] + 10 <= b[0] for a, b in itertools.pairwise(spans))


@pytest.mark.parametrize(
    ("ctx", "axis"), [("1k:64k:4k", "linear"), ("1k:1M", "log2"), ("4k,8k,32k", "linear"), ("1k,8k,128k", "log2")]
)
def test_svg_for_any_range(tmp_path: Path, ctx: str, axis: str) -> None:
    svg = tmp_path / "c.svg"
    r = kv("curve", "gemma-3-27b", "-c", ctx, "--svg", str(svg), "-o", "json")
    assert r.exit_code == 0, r.output
    doc = r.json()
    assert (
        doc["axis"] == axis
        and doc["rows"][-1]["n_ctx"]
        == {"1k:64k:4k": 65536, "1k:1M": 1 << 20, "4k,8k,32k": 32768, "1k,8k,128k": 131072}[ctx]
    )
    root = ET.parse(svg).getroot()
    texts = [t.text or "" for t in root.iter(f"{SVG}text")]
    assert "KV / state memory (GiB)" in texts and any(f"{axis} scale" in t for t in texts)
    assert f"{doc['rows'][-1]['n_ctx']:,}" in texts  # the end of the range is labelled
