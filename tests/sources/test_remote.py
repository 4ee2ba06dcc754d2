"""Remote GGUF headers over HTTP Range requests, against a local server started by the test (no internet)."""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from gguf_files import big_vocab_model, split_shard
from helpers import kv

from kvplan.errors import GGUFError
from kvplan.runtimes.llamacpp import LlamaCppSettings, plan
from kvplan.sources import load_model
from kvplan.sources.gguf_source import load_gguf_model
from kvplan.sources.remote import read_remote_gguf, resolve


class _Handler(http.server.BaseHTTPRequestHandler):
    root: Path
    sent: list[int]
    mode: dict
    seen: list[tuple[str, str | None]]

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        mode = self.mode
        if mode.get("sleep"):
            time.sleep(mode["sleep"])
        if self.path.startswith("/redirect/"):
            self.send_response(302)
            self.send_header("Location", self.path.removeprefix("/redirect"))
            self.end_headers()
            return
        if mode.get("require_token") and self.headers.get("Authorization") != "Bearer secret":
            self.send_error(401, "Unauthorized")
            return
        self.seen.append((self.path, self.headers.get("Authorization")))
        rel = self.path.lstrip("/")
        if "/resolve/" in rel:  # ORG/REPO/resolve/REVISION/PATH → REVISION/PATH (main: PATH)
            rev, _, rest = rel.split("/resolve/", 1)[1].partition("/")
            rel = rest if rev == "main" else f"{rev}/{rest}"
        path = self.root / rel
        if not path.is_file():
            self.send_error(404, "Not Found")
            return
        data = path.read_bytes()
        rng = self.headers.get("Range")
        if mode.get("no_range") or not rng:
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[:1024])  # a client must not read a whole model it did not ask for
            return
        start, end = (int(x) for x in rng.removeprefix("bytes=").split("-"))
        end = min(end, len(data) - 1)
        body = data[start : end + 1]
        if mode.get("short"):
            body = body[: len(body) // 2]
        self.send_response(206)
        self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.sent.append(len(body))


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, _Handler]]:
    handler = type("H", (_Handler,), {"root": tmp_path, "sent": [], "mode": {}, "seen": []})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", handler
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_remote_estimate_matches_local_reading_only_the_header(tmp_path: Path, server) -> None:
    base, handler = server
    local = big_vocab_model(tmp_path / "m.gguf")
    size = local.stat().st_size
    f, reader = read_remote_gguf(f"{base}/m.gguf")
    local_model = load_gguf_model(str(local))
    assert f.kv["llama.block_count"] == 32 and f.kv["tokenizer.ggml.tokens"].count == 150_000
    header = f.header_bytes
    assert reader.bytes_transferred == sum(handler.sent)
    # only header bytes come over the wire: at most the first window or twice the header
    assert reader.bytes_transferred <= max(2 * 1024 * 1024, 2 * header) < size / 4
    remote_model = load_gguf_model(f"{base}/m.gguf")
    s = LlamaCppSettings(n_ctx=8192)
    assert plan(remote_model, s).total_bytes == plan(local_model, s).total_bytes == 1073741824
    assert remote_model.weight_bytes == local_model.weight_bytes == 24 * 1024 * 1024
    r = kv(*["estimate", f"{base}/m.gguf", "-c", "8192", "-o", "json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["memory"]["total_bytes"] == 1073741824


def test_header_larger_than_the_first_window_grows(tmp_path: Path, server) -> None:
    base, _handler = server
    big_vocab_model(tmp_path / "big.gguf", vocab=400_000, tensor_mib=1)
    f, reader = read_remote_gguf(f"{base}/big.gguf")
    assert f.kv["tokenizer.ggml.tokens"].count == 400_000
    assert reader.requests >= 2 and reader.bytes_transferred <= 2 * f.header_bytes + 2 * 1024 * 1024


def test_hf_references_resolve_like_the_hub(tmp_path: Path, server, monkeypatch) -> None:
    base, handler = server
    big_vocab_model(tmp_path / "model-q4.gguf", vocab=10, tensor_mib=1)
    monkeypatch.setenv("HF_ENDPOINT", base)
    assert resolve("hf://org/repo/sub/file.gguf") == (f"{base}/org/repo/resolve/main/sub/file.gguf", True)
    assert resolve("hf://org/repo@v1.0/file.gguf") == (f"{base}/org/repo/resolve/v1.0/file.gguf", True)
    assert resolve(f"{base}/x.gguf") == (f"{base}/x.gguf", False)
    handler.mode["require_token"] = True
    r = kv(*["estimate", "hf://org/repo/model-q4.gguf", "-c", "4096"])
    assert r.exit_code == 3 and "HTTP 401" in r.stderr and "HF_TOKEN" in r.stderr
    monkeypatch.setenv("HF_TOKEN", "secret")
    r = kv(*["estimate", "hf://org/repo/model-q4.gguf", "-c", "4096", "-o", "json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["memory"]["total_bytes"] == 536870912


def test_redirects_are_followed(tmp_path: Path, server) -> None:
    base, _ = server
    big_vocab_model(tmp_path / "r.gguf", vocab=10, tensor_mib=1)
    f, _reader = read_remote_gguf(f"{base}/redirect/r.gguf")
    assert f.kv["llama.block_count"] == 32


def test_clear_errors(tmp_path: Path, server) -> None:
    base, handler = server
    big_vocab_model(tmp_path / "e.gguf", vocab=10, tensor_mib=1)
    with pytest.raises(GGUFError, match="HTTP 404"):
        read_remote_gguf(f"{base}/missing.gguf")
    handler.mode.update(no_range=True)
    with pytest.raises(GGUFError, match="does not support HTTP Range"):
        read_remote_gguf(f"{base}/e.gguf")
    handler.mode.clear()
    handler.mode.update(short=True)
    with pytest.raises(GGUFError, match="short read"):
        read_remote_gguf(f"{base}/e.gguf")
    handler.mode.clear()
    (tmp_path / "junk.gguf").write_bytes(b"NOPE" * 100)
    with pytest.raises(GGUFError, match="not a GGUF file"):
        read_remote_gguf(f"{base}/junk.gguf")
    r = kv(*["estimate", "http://127.0.0.1:9/none.gguf"])
    assert r.exit_code == 3 and r.stderr.startswith("kvplan: error: http://127.0.0.1:9/none.gguf")


def test_timeout(tmp_path: Path, server, monkeypatch) -> None:
    base, handler = server
    big_vocab_model(tmp_path / "t.gguf", vocab=10, tensor_mib=1)
    monkeypatch.setattr("kvplan.sources.remote.TIMEOUT_S", 0.3)
    from kvplan.sources import remote

    handler.mode["sleep"] = 1.0
    reader = remote.RemoteReader(f"{base}/t.gguf", "t.gguf", timeout=0.3)
    with pytest.raises(GGUFError, match="timed out"):
        reader.fetch(0, 1024)


def test_remote_split_model_reads_every_shard_header(tmp_path: Path, server) -> None:
    base, _ = server
    split_shard(tmp_path / "s-00001-of-00002.gguf", 0, 2, "token_embd.weight", 10)
    split_shard(tmp_path / "s-00002-of-00002.gguf", 1, 2, "output.weight", 3)
    m = load_gguf_model(f"{base}/s-00001-of-00002.gguf")
    assert m.n_layer_all == 2 and m.weight_bytes == (10 + 3) * 64 * 4


ENGINE_CONFIGS = Path(__file__).resolve().parent.parent / "fixtures" / "engines" / "configs"


def _safetensors(path: Path, tensors: dict[str, tuple[str, list[int], int]]) -> None:
    """A model.safetensors with these tensors (dtype, shape, bytes each) and zeroed data."""
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, (dtype, shape, size) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    path.write_bytes(len(raw).to_bytes(8, "little") + raw + bytes(offset))


def test_hf_repo_reads_config_and_index_like_the_local_folder(tmp_path: Path, server, monkeypatch) -> None:
    """hf://ORG/REPO: config.json and model.safetensors.index.json only; the same model as the folder."""
    base, handler = server
    monkeypatch.setenv("HF_ENDPOINT", base)
    cfg = json.loads((ENGINE_CONFIGS / "qwen3-next-80b-a3b" / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    index = {"metadata": {"total_size": 162_000_000_000}, "weight_map": {
        "model.embed_tokens.weight": "model-00001-of-00002.safetensors",
        "mtp.layers.0.self_attn.q_proj.weight": "model-00002-of-00002.safetensors"}}  # fmt: skip
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    (tmp_path / "model-00001-of-00002.safetensors").write_bytes(b"x" * 4096)  # never fetched
    remote, local = load_model("hf://Qwen/Qwen3-Next-80B-A3B-Instruct"), load_model(str(tmp_path))
    paths = [p for p, _ in handler.seen]
    assert paths == [
        "/Qwen/Qwen3-Next-80B-A3B-Instruct/resolve/main/config.json",
        "/Qwen/Qwen3-Next-80B-A3B-Instruct/resolve/main/model.safetensors.index.json",
    ]
    assert remote.checkpoint_bytes == local.checkpoint_bytes == 162_000_000_000
    assert remote.n_layer_nextn == local.n_layer_nextn == 1  # the MTP layer the converter counts from the names
    s = LlamaCppSettings(n_ctx=32768)
    assert plan(remote, s).total_bytes == plan(local, s).total_bytes
    assert remote.source == "hf://Qwen/Qwen3-Next-80B-A3B-Instruct" and remote.source_kind == "hf-config"


def test_hf_repo_revision_token_and_offline(tmp_path: Path, server, monkeypatch) -> None:
    base, handler = server
    monkeypatch.setenv("HF_ENDPOINT", base)
    (tmp_path / "v2").mkdir()
    cfg = json.loads((ENGINE_CONFIGS / "llama-3.1-8b" / "config.json").read_text())
    (tmp_path / "v2" / "config.json").write_text(json.dumps(cfg))
    _safetensors(
        tmp_path / "v2" / "model.safetensors", {"a": ("BF16", [1024, 512], 1 << 20), "b": ("F32", [256], 1024)}
    )
    handler.mode["require_token"] = True
    r = kv(*["estimate", "hf://meta-llama/Llama-3.1-8B@v2", "-c", "4096"])
    assert r.exit_code == 3 and "HTTP 401" in r.stderr and "HF_TOKEN" in r.stderr
    monkeypatch.setenv("HF_TOKEN", "secret")
    r = kv(*["estimate", "hf://meta-llama/Llama-3.1-8B@v2", "-c", "4096", "-o", "json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["memory"]["total_bytes"] == 536870912  # 32 x 8 x 128 x f16 x 2 x 4096
    m = load_model("hf://meta-llama/Llama-3.1-8B@v2")
    assert m.checkpoint_bytes == (1 << 20) + 1024 and m.n_params == 1024 * 512 + 256  # the single file's header
    assert all(tok == "Bearer secret" for _, tok in handler.seen[-4:])  # the endpoint's own requests only
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    r = kv(*["estimate", "hf://meta-llama/Llama-3.1-8B", "-c", "4096"])
    assert r.exit_code == 3 and "HF_HUB_OFFLINE" in r.stderr


def test_hf_repo_without_config_and_remote_config_urls(tmp_path: Path, server, monkeypatch) -> None:
    base, _handler = server
    monkeypatch.setenv("HF_ENDPOINT", base)
    r = kv(*["estimate", "hf://org/empty", "-c", "4096"])
    assert r.exit_code == 3 and "hf://org/empty" in r.stderr and "HTTP 404" in r.stderr
    assert r.stderr.count("\n") == 1
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "config.json").write_text((ENGINE_CONFIGS / "qwen3-32b" / "config.json").read_text())
    r = kv(*["estimate", f"{base}/c/config.json", "-c", "4096", "-o", "json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["model"]["source_kind"] == "hf-config"
    (tmp_path / "big").mkdir()
    (tmp_path / "big" / "config.json").write_bytes(b" " * (17 << 20))
    r = kv(*["estimate", f"{base}/big/config.json"])
    assert r.exit_code == 3 and "larger than" in r.stderr


def test_hf_ids_resolve_offline_to_the_catalog(monkeypatch) -> None:
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens: any request would fail
    assert load_model("meta-llama/Llama-3.1-8B-Instruct").source == "catalog:llama-3.1-8b"
    r = kv(*["estimate", "someorg/unknown-model-7b"])
    assert r.exit_code == 3 and "hf://someorg/unknown-model-7b" in r.stderr


def test_an_hf_repo_run_line_names_the_repo_and_pastes_back(tmp_path: Path, server, monkeypatch) -> None:
    """A checkpoint kvplan has no catalog entry for, read over hf:// (here a loopback hub): the run line starts
    the engine with the repository id vLLM and SGLang take, and its flags fed back with the same reference give the
    same plan."""
    base, _handler = server
    monkeypatch.setenv("HF_ENDPOINT", base)
    cfg = json.loads((ENGINE_CONFIGS / "qwen2.5-7b" / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    ref = "hf://someorg/Private-Qwen-7B"
    for engine, hardware, question in (
        ("vllm", ["--gpu", "L4"], ["--max-model-len", "16k", "--max-num-seqs", "8", "--kv-cache-dtype", "fp8"]),
        ("sglang", ["--gpu", "RTX-4090"], ["--context-length", "8k", "--mem-fraction-static", "0.8"]),
    ):
        first = kv("fit", ref, "--engine", engine, *hardware, *question, "-o", "json")
        assert first.exit_code == 0, first.output
        doc = first.json()
        assert doc["run_command"].split()[-1] == "someorg/Private-Qwen-7B", doc["run_command"]
        again = kv("fit", ref, "--engine", engine, *hardware, *doc["run_args"], "-o", "json")
        assert again.exit_code == 0, (doc["run_args"], again.output)
        redo = again.json()
        assert redo["devices"] == doc["devices"] and redo["ctx_per_seq"] == doc["ctx_per_seq"]
        assert {k: v for k, v in redo["engine"].items() if k != "sequences_that_fit"} == {
            k: v for k, v in doc["engine"].items() if k != "sequences_that_fit"
        }
