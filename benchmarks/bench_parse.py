"""Parse-speed benchmark: kvplan's GGUF reader vs gguf.GGUFReader vs llama.cpp's gguf_init_from_file.

usage: python benchmarks/bench_parse.py [VOCAB.gguf ...] [--llama-init PATH] [--runs N] [--gguf-reader]

Without files it generates a Qwen2-like vocabulary GGUF (151,936 tokens + 151,387 merges + token types,
llama hparams) so it runs anywhere. With llama.cpp's sources (the oracle build unpacks them), pass
``models/ggml-vocab-qwen2.gguf`` and friends. ``--llama-init`` is benchmarks/gguf_init_time.c compiled
against the oracle's libggml-base (see its header). Prints a Markdown table; the README shows the figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kvplan.sources.gguf_reader import read_gguf  # noqa: E402


def make_vocab_file(path: Path, n_tokens: int = 151936, n_merges: int = 151387) -> Path:
    import gguf

    w = gguf.GGUFWriter(str(path), "qwen2")
    w.add_context_length(32768)
    w.add_embedding_length(3584)
    w.add_block_count(28)
    w.add_head_count(28)
    w.add_head_count_kv(4)
    w.add_tokenizer_model("gpt2")
    w.add_token_list([f"tok{i:06d}\u0120x" for i in range(n_tokens)])
    w.add_token_types([1] * n_tokens)
    w.add_token_merges([f"a{i} b{i}" for i in range(n_merges)])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.close()
    return path


def best_of(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def cli_seconds(path: Path, runs: int) -> float:
    cmd = [sys.executable, "-m", "kvplan", "estimate", str(path), "-c", "4096", "-o", "json"]
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, cwd=ROOT)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="*")
    ap.add_argument("--llama-init", help="compiled benchmarks/gguf_init_time.c")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--gguf-reader", action="store_true", help="also time gguf.GGUFReader (slow: one run)")
    args = ap.parse_args()
    tmp = tempfile.TemporaryDirectory()
    files = [Path(f) for f in args.files] or [make_vocab_file(Path(tmp.name) / "qwen2-like-vocab.gguf")]
    print("| file | size | kvplan parse | llama.cpp gguf_init_from_file | gguf.GGUFReader | kvplan estimate CLI |")
    print("|---|---:|---:|---:|---:|---:|")
    for f in files:
        ours = best_of(lambda f=f: read_gguf(f), args.runs)
        theirs = "-"
        if args.llama_init:
            out = subprocess.run([args.llama_init, str(f), str(args.runs)], capture_output=True, text=True, check=True)
            theirs = f"{float(out.stdout) * 1000:.1f} ms"
        reader = "-"
        if args.gguf_reader:
            import gguf

            reader = f"{best_of(lambda f=f: gguf.GGUFReader(str(f)), 1):.2f} s"
        meta = read_gguf(f)
        cli = (
            f"{cli_seconds(f, 5) * 1000:.0f} ms"
            if meta.architecture and f"{meta.architecture}.context_length" in meta.kv
            else "-"
        )
        print(
            f"| {f.name} | {os.path.getsize(f) / 2**20:.1f} MiB | {ours * 1000:.1f} ms | {theirs} | {reader} | {cli} |"
        )


if __name__ == "__main__":
    main()
