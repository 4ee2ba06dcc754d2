"""Record SGLang 0.5.23's own startup lines about its KV pool for a selection of the recorded sizing cases
(tests/fixtures/logs/sglang/recorded/): the logs `kvplan explain` is proven on, their pool lines written by
SGLang's code.

usage: python3 scripts/engines/record_sglang_logs.py SGLANG_VENV_PYTHON [--jobs 2] [--new]

The selection (cases() below): from tests/fixtures/engines/sglang.json, the first case SGLang sized for each
model, and up to two more per model with other settings (tensor parallelism, an fp8 KV cache, a
mem_fraction_static, a context length with max_running_requests, the radix cache off, a page size), then once a
model each of the settings added later (--max-total-tokens, --swa-full-tokens-ratio, --max-mamba-cache-size, and
the radix cache off with --max-running-requests on a hybrid SWA model). Each runs
sglang_log_case.py (one process, ≈ 15 s) with the model's config folder named relative to the repository,
as `sglang.launch_server --model-path` would be given it; SGLang's answers must equal those of the sizing recording.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "tests" / "fixtures" / "engines" / "sglang.json"
OUT = ROOT / "tests" / "fixtures" / "logs" / "sglang" / "recorded"
SPECIAL = ("kv_cache_dtype", "mem_fraction_static", "context_length", "disable_radix_cache", "page_size")
LATER = (
    "max_total_tokens",
    "swa_full_tokens_ratio",
    "max_mamba_cache_size",
    "chunked_prefill_size",
    "max_prefill_tokens",
    "disable_overlap_schedule",
)


def cases() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    every = [(c["case"], c["ok"]) for c in json.loads(RECORDED.read_text())["cases"] if "ok" in c]

    def later_kind(case: dict[str, Any], ok: dict[str, Any]) -> tuple[str, ...]:
        keys = tuple(k for k in LATER if case.get(k) is not None)
        if case.get("disable_radix_cache") and case.get("max_running_requests") and ok["is_hybrid_swa"]:
            keys += ("swa_request_cap",)
        return keys

    recorded = [(case, ok) for case, ok in every if not later_kind(case, ok)]

    def kind(case: dict[str, Any]) -> tuple[str, ...]:
        return tuple(k for k in SPECIAL if case.get(k) is not None) + (("tp",) if case.get("tp_size", 1) > 1 else ())

    def rank(case: dict[str, Any]) -> int:  # the rarer settings first
        return min((SPECIAL[::-1].index(k) for k in kind(case) if k in SPECIAL), default=len(SPECIAL))

    picked: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for case, ok in recorded:  # the first case of each model
        if not any(p[0]["model"] == case["model"] for p in picked):
            picked.append((case, ok))
    seen = {(p[0]["model"], kind(p[0])) for p in picked}
    for case, ok in sorted(recorded, key=lambda r: rank(r[0])):  # then up to two more settings, rarer first
        model = case["model"]
        if kind(case) and (model, kind(case)) not in seen and sum(p[0]["model"] == model for p in picked) < 3:
            seen.add((model, kind(case)))
            picked.append((case, ok))
    # then the settings that came later, each once a model: a capped pool, the SWA share, the state pool's size,
    # and the radix cache off with a request cap (SGLang sizes a hybrid SWA model's SWA pool from the requests)
    for case, ok in every:
        later = later_kind(case, ok)
        if later and (case["model"], later) not in seen:
            seen.add((case["model"], later))
            picked.append((case, ok))
    return picked


def name_of(i: int, case: dict[str, Any]) -> str:
    extra = "-".join(f"{k}={v}" for k, v in sorted(case.items())
                     if k not in ("model", "gpu", "pre_bytes", "available_bytes", "weight_bytes")
                     and v is not None and not (k == "tp_size" and v == 1))  # fmt: skip
    label = f"{case['model']}-{case['gpu']['preset']}" + (f"-{extra}" if extra else "")
    slug = re.sub(r"[^A-Za-z0-9.=_-]+", "-", label)
    return f"{i:02d}-{slug}"[:120]


def run(python: str, case: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    arg = {**case, "model": f"tests/fixtures/engines/configs/{case['model']}"}
    proc = subprocess.run([python, str(Path(__file__).with_name("sglang_log_case.py")), json.dumps(arg)],
                          capture_output=True, text=True, timeout=900, cwd=ROOT)  # fmt: skip
    log, sep, result = proc.stdout.rpartition("SGLANG_CASE_RESULT ")
    if not sep:
        raise RuntimeError(f"{case}: no result\n{proc.stderr[-3000:]}")
    answer = json.loads(result)
    if "ok" not in answer:
        raise RuntimeError(f"{case}: {answer}")
    return log, answer["ok"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("python")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--new", action="store_true", help="record only the logs the index does not hold yet")
    args = ap.parse_args()
    todo = list(enumerate(cases()))
    OUT.mkdir(parents=True, exist_ok=True)
    index: dict[str, Any] = {}
    if args.new and (OUT / "index.json").exists():
        index = json.loads((OUT / "index.json").read_text())["logs"]
        held = [e["case"] for e in index.values()]
        todo = [(i, c) for i, c in todo if c[0] not in held]
    with ThreadPoolExecutor(args.jobs) as pool:
        runs = pool.map(lambda c: run(args.python, c[1][0]), todo)
        for (i, (case, sized)), (text, answer) in zip(todo, runs, strict=True):
            if answer != sized:
                raise RuntimeError(f"{case}: SGLang answered {answer}, the sizing recording {sized}")
            name = name_of(i, case) + ".log"
            (OUT / name).write_text(text)
            index[name] = {"case": case, "sglang": answer}
            print(name, flush=True)
    recorder = ["Load weight begin", "Load weight end", "max_total_num_tokens="]
    (OUT / "index.json").write_text(json.dumps({"sglang": "0.5.23", "recorder_lines": recorder, "logs": index},
                                               indent=1, sort_keys=True) + "\n")  # fmt: skip
    print(f"wrote {len(index)} logs to {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
