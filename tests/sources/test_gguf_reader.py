"""The GGUF reader: files written by the gguf package read back exactly; malformed files end in GGUFError."""

from __future__ import annotations

import contextlib
import os
import struct
import tracemalloc
from pathlib import Path

import gguf
import numpy as np
import pytest
from gguf_files import split_shard
from helpers import kv
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvplan.errors import GGUFError
from kvplan.sources.gguf_reader import NeedMoreData, parse_gguf, read_gguf


def _write(path: Path, *, tensors: bool = True, big_vocab: int = 0, endianess=gguf.GGUFEndian.LITTLE) -> Path:
    w = gguf.GGUFWriter(str(path), "llama", endianess=endianess)
    w.add_block_count(2)
    w.add_context_length(4096)
    w.add_embedding_length(64)
    w.add_head_count(4)
    w.add_head_count_kv(2)
    w.add_float32("llama.rope.freq_base", 10000.0)
    w.add_bool("llama.flag", True)
    w.add_uint64("llama.big", 2**40)
    w.add_int32("llama.neg", -5)
    w.add_string("general.name", "tiny ünïcode")
    w.add_array("llama.small", [1, 2, 3])
    w.add_array("llama.names", ["a", "bc"])
    if big_vocab:
        w.add_token_list([f"tok{i}" for i in range(big_vocab)])
        w.add_token_scores([0.5] * big_vocab)
    if tensors:
        w.add_tensor("blk.0.attn_q.weight", np.zeros((64, 64), dtype=np.float16))
        w.add_tensor("token_embd.weight", np.zeros((10, 64), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_reads_every_value_type(tmp_path: Path) -> None:
    f = read_gguf(_write(tmp_path / "m.gguf"))
    assert f.version == 3 and not f.big_endian
    assert f.kv["llama.block_count"] == 2
    assert f.kv["llama.rope.freq_base"] == 10000.0
    assert f.kv["llama.flag"] is True
    assert f.kv["llama.big"] == 2**40
    assert f.kv["llama.neg"] == -5
    assert f.kv["general.name"] == "tiny ünïcode"
    assert f.kv["llama.small"].values == (1, 2, 3) and f.kv["llama.small"].count == 3
    assert f.kv["llama.names"].values == ("a", "bc")
    shapes = {t.name: t.shape for t in f.tensors}
    assert shapes == {"blk.0.attn_q.weight": (64, 64), "token_embd.weight": (64, 10)}
    # weight bytes: 64×64 f16 + 10×64 f32
    assert f.tensor_bytes == 64 * 64 * 2 + 10 * 64 * 4


def test_large_arrays_are_counted_not_materialised(tmp_path: Path) -> None:
    f = read_gguf(_write(tmp_path / "v.gguf", big_vocab=50000, tensors=False))
    tokens = f.kv["tokenizer.ggml.tokens"]
    assert tokens.count == 50000 and tokens.values is None
    assert f.kv["tokenizer.ggml.scores"].count == 50000


def test_big_endian(tmp_path: Path) -> None:
    f = read_gguf(_write(tmp_path / "be.gguf", endianess=gguf.GGUFEndian.BIG))
    assert f.big_endian and f.kv["llama.block_count"] == 2 and f.kv["llama.neg"] == -5
    assert [t.shape for t in f.tensors] == [(64, 64), (64, 10)]


def _header(version: int = 3, n_tensors: int = 0, n_kv: int = 0) -> bytes:
    return b"GGUF" + struct.pack("<Iqq", version, n_tensors, n_kv)


def _kv(key: str, vtype: int, payload: bytes) -> bytes:
    k = key.encode()
    return struct.pack("<Q", len(k)) + k + struct.pack("<i", vtype) + payload


def _tensor(name: str, dims: list[int], ggml_type: int, offset: int) -> bytes:
    n = name.encode()
    return (
        struct.pack("<Q", len(n))
        + n
        + struct.pack("<I", len(dims))
        + b"".join(struct.pack("<q", d) for d in dims)
        + struct.pack("<iQ", ggml_type, offset)
    )


MALFORMED = {
    "bad magic": b"FUGG" + _header()[4:],
    "version 0": _header(version=0),
    "version 1": _header(version=1),
    "future version": _header(version=4),
    "n_tensors -1": _header(n_tensors=-1),
    "n_kv -1": _header(n_kv=-1),
    "huge n_kv": _header(n_kv=2**40),
    "key length 2^64-1": _header(n_kv=1) + struct.pack("<Q", 2**64 - 1),
    "empty key": _header(n_kv=1) + _kv("", 4, struct.pack("<I", 1)),
    "bad value type": _header(n_kv=1) + _kv("a", 13, b"\0" * 8),
    "bad array type": _header(n_kv=1) + _kv("a", 9, struct.pack("<iQ", 13, 1)),
    "nested array": _header(n_kv=1) + _kv("a", 9, struct.pack("<iQ", 9, 1)),
    "array longer than file": _header(n_kv=1) + _kv("a", 9, struct.pack("<iQ", 4, 2**29)),
    "string array bomb": _header(n_kv=1) + _kv("a", 9, struct.pack("<iQ", 8, 2**29)),
    "duplicate key": _header(n_kv=2) + _kv("a", 4, struct.pack("<I", 1)) * 2,
    "alignment 13": _header(n_kv=1) + _kv("general.alignment", 4, struct.pack("<I", 13)),
    "alignment as i32": _header(n_kv=1) + _kv("general.alignment", 5, struct.pack("<i", 32)),
    "string not utf-8": _header(n_kv=1) + _kv("a", 8, struct.pack("<Q", 2) + b"\xff\xfe"),
    "tensor name 64 bytes": _header(n_tensors=1) + _tensor("x" * 64, [32], 0, 0) + b"\0" * 256,
    "5 dims": _header(n_tensors=1) + _tensor("t", [1, 1, 1, 1, 1], 0, 0) + b"\0" * 64,
    "negative dim": _header(n_tensors=1) + _tensor("t", [-1], 0, 0) + b"\0" * 64,
    "element count overflow": _header(n_tensors=1) + _tensor("t", [2**33, 2**33], 0, 0) + b"\0" * 64,
    "unknown tensor type": _header(n_tensors=1) + _tensor("t", [32], 43, 0) + b"\0" * 64,
    "removed tensor type 4": _header(n_tensors=1) + _tensor("t", [32], 4, 0) + b"\0" * 64,
    "row not a block multiple": _header(n_tensors=1) + _tensor("t", [33], 8, 0) + b"\0" * 64,
    "bad offset": _header(n_tensors=1) + _tensor("t", [8], 0, 2**64 - 1) + b"\0" * 64,
    "duplicate tensor": _header(n_tensors=2) + _tensor("t", [8], 0, 0) + _tensor("t", [8], 0, 32) + b"\0" * 64,
    "data past end": _header(n_tensors=1) + _tensor("t", [1024], 0, 0) + b"\0" * 16,
    # TENSORS_NBYTES_TOO_BIG: an i64 tensor whose byte size exceeds what a size_t can hold
    "nbytes too big": _header(n_tensors=1) + _tensor("t", [2**61, 2], 27, 0) + b"\0" * 64,
    # TENSORS_NBYTES_PAD_WRAP: f32 [4, 2^30-1, 2^30+1] → nbytes = 2^64 - 16, padding would wrap to 0
    "nbytes pad wrap": _header(n_tensors=1) + _tensor("t", [4, 2**30 - 1, 2**30 + 1], 0, 0) + b"\0" * 64,
    # TENSORS_BAD_ALIGN: alignment 13 with tensors present
    "tensors bad align": _header(n_tensors=1, n_kv=1)
    + _kv("general.alignment", 4, struct.pack("<I", 13))
    + _tensor("t", [8], 0, 0)
    + b"\0" * 64,
    # TENSORS_INCONSISTENT_ALIGN: offsets laid out with alignment 1, the file declares 32
    "inconsistent align": _header(n_tensors=2) + _tensor("a", [3], 24, 0) + _tensor("b", [3], 24, 3) + b"\0" * 64,
    # DATA_NOT_ENOUGH_DATA: the data blob is one byte short
    "data one byte short": (lambda h: h + b"\0" * (-len(h) % 32) + b"\0" * 31)(
        _header(n_tensors=1) + _tensor("t", [8], 0, 0)
    ),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_files_are_refused(name: str) -> None:
    tracemalloc.start()
    with pytest.raises(GGUFError) as info:
        parse_gguf(MALFORMED[name], "bad.gguf")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert str(info.value).startswith("bad.gguf")
    assert peak < 1 << 20  # no allocation from a declared length


def test_custom_alignment_and_prefix_reads(tmp_path: Path) -> None:
    aligned = _header(n_tensors=2, n_kv=1) + _kv("general.alignment", 4, struct.pack("<I", 1))
    aligned += _tensor("a", [3], 24, 0) + _tensor("b", [3], 24, 3)
    f = parse_gguf(aligned + b"\0" * 6, "a.gguf")
    assert f.alignment == 1 and [t.offset for t in f.tensors] == [0, 3]
    data = _write(tmp_path / "p.gguf", big_vocab=3000).read_bytes()
    whole = parse_gguf(data, "p.gguf")
    for cut in range(0, whole.header_bytes, 997):
        try:
            part = parse_gguf(data[:cut], "p.gguf", size=len(data))
        except NeedMoreData as more:
            wanted = more.upto
        else:
            wanted = None
            assert part.kv.keys() == whole.kv.keys()
        assert wanted is None or cut < wanted <= whole.header_bytes + 8


def test_accepts_what_llama_cpp_accepts() -> None:
    assert parse_gguf(_header(), "empty.gguf").kv == {}
    zero_dim = _header(n_tensors=1) + _tensor("t", [8, 0], 0, 0)
    f = parse_gguf(zero_dim + b"\0" * (-len(zero_dim) % 32), "z.gguf")
    assert f.tensors[0].n_bytes == 0


def test_truncation_at_every_byte(tmp_path: Path) -> None:
    data = _write(tmp_path / "t.gguf").read_bytes()
    header_end = read_gguf(tmp_path / "t.gguf").header_bytes
    for cut in range(header_end + 1):
        with pytest.raises(GGUFError):
            parse_gguf(data[:cut], "t.gguf")


def test_file_errors(tmp_path: Path) -> None:
    with pytest.raises(GGUFError, match="empty"):
        read_gguf(_touch(tmp_path / "e.gguf"))
    with pytest.raises(GGUFError, match="cannot read"):
        read_gguf(tmp_path / "missing.gguf")
    with pytest.raises(GGUFError, match="a folder; expected a GGUF file"):
        read_gguf(tmp_path)
    fifo = tmp_path / "f.gguf"
    os.mkfifo(fifo)
    with pytest.raises(GGUFError, match="not a regular file"):  # refused before it is opened: no hang
        read_gguf(fifo)


def test_a_file_truncated_while_it_is_read(tmp_path: Path) -> None:
    """The header is read as it is needed, never mapped: a file that shrinks underneath is an error, not SIGBUS."""
    from kvplan.sources import gguf_reader

    path = _write(tmp_path / "v.gguf", big_vocab=200_000)
    real = os.pread

    def shrinking(fd: int, n: int, offset: int) -> bytes:
        return real(fd, n, offset) if offset == 0 else real(fd, n, offset)[: n // 3]

    gguf_reader.os.pread = shrinking  # type: ignore[assignment]
    try:
        with pytest.raises(GGUFError, match="file truncated"):
            read_gguf(path)
    finally:
        gguf_reader.os.pread = real  # type: ignore[assignment]


def _touch(p: Path) -> Path:
    p.write_bytes(b"")
    return p


_VALID = None


def _valid_bytes() -> bytes:
    global _VALID
    if _VALID is None:
        import tempfile

        with tempfile.TemporaryDirectory() as d:
            _VALID = _write(Path(d) / "f.gguf").read_bytes()
    return _VALID


@settings(max_examples=300, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutations_end_in_a_result_or_our_error(data: st.DataObject) -> None:
    raw = bytearray(_valid_bytes())
    for _ in range(data.draw(st.integers(1, 8))):
        pos = data.draw(st.integers(0, len(raw) - 1))
        raw[pos] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(raw)))
    with contextlib.suppress(GGUFError):
        parse_gguf(bytes(raw[:cut]), "fuzz.gguf")


def test_gguf_v2_reads_like_v3(tmp_path: Path) -> None:
    data = bytearray(_write(tmp_path / "v3.gguf").read_bytes())
    data[4:8] = struct.pack("<I", 2)
    f = parse_gguf(bytes(data), "v2.gguf")
    assert f.version == 2 and f.kv["llama.block_count"] == 2


def test_split_model_reads_metadata_from_first_and_weights_from_all(tmp_path: Path) -> None:
    from kvplan.errors import GGUFError as Err
    from kvplan.sources.gguf_source import load_gguf_model

    split_shard(tmp_path / "m-00001-of-00002.gguf", 0, 2, "token_embd.weight", 10)
    split_shard(tmp_path / "m-00002-of-00002.gguf", 1, 2, "output.weight", 3)
    m = load_gguf_model(str(tmp_path / "m-00001-of-00002.gguf"))
    assert m.n_layer_all == 2 and m.weight_bytes == (10 + 3) * 64 * 4
    (tmp_path / "m-00002-of-00002.gguf").unlink()
    with pytest.raises(Err, match="shard missing"):
        load_gguf_model(str(tmp_path / "m-00001-of-00002.gguf"))


_SCALARS = {
    gguf.GGUFValueType.UINT8: st.integers(0, 255),
    gguf.GGUFValueType.INT8: st.integers(-128, 127),
    gguf.GGUFValueType.UINT16: st.integers(0, 2**16 - 1),
    gguf.GGUFValueType.INT16: st.integers(-(2**15), 2**15 - 1),
    gguf.GGUFValueType.UINT32: st.integers(0, 2**32 - 1),
    gguf.GGUFValueType.INT32: st.integers(-(2**31), 2**31 - 1),
    gguf.GGUFValueType.UINT64: st.integers(0, 2**64 - 1),
    gguf.GGUFValueType.INT64: st.integers(-(2**63), 2**63 - 1),
    gguf.GGUFValueType.BOOL: st.booleans(),
    gguf.GGUFValueType.STRING: st.text(max_size=40),
}


@settings(max_examples=40, deadline=2000)
@given(st.lists(st.tuples(st.sampled_from(sorted(_SCALARS)), st.booleans(), st.data()), min_size=1, max_size=25))
def test_random_key_values_round_trip(tmp_path_factory, entries) -> None:
    """llama.cpp's KV_SUCCESS case: random KVs of every type, scalars and arrays, read back exactly."""
    path = tmp_path_factory.mktemp("kv") / "r.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    expected = {}
    for i, (vtype, is_array, data) in enumerate(entries):
        strategy = _SCALARS[vtype]
        key = f"test.key_{i}"
        if is_array:
            value = data.draw(st.lists(strategy, min_size=1, max_size=20))
            w.add_key_value(key, value, gguf.GGUFValueType.ARRAY, sub_type=vtype)
        else:
            value = data.draw(strategy)
            w.add_key_value(key, value, vtype)
        expected[key] = value
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.close()
    kv = read_gguf(path).kv
    for key, value in expected.items():
        got = kv[key]
        assert (list(got.values) if isinstance(value, list) else got) == value


def test_hparams_keys_are_type_strict_like_llamacpp(tmp_path: Path) -> None:
    """llama.cpp's get_key checks the stored type: 'key llama.block_count has wrong type i32 but expected type
    u32' (checked with the oracle's harness); a YAML spec of the same number has no GGUF type and is fine."""

    def write(path: Path, add) -> Path:
        w = gguf.GGUFWriter(str(path), "llama")
        add(w, "llama.block_count", 2)
        w.add_context_length(4096)
        w.add_embedding_length(64)
        w.add_head_count(4)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        return path

    ok = kv(*["estimate", str(write(tmp_path / "u32.gguf", gguf.GGUFWriter.add_uint32)), "-c", "512"])
    assert ok.exit_code == 0, ok.output
    bad = kv(*["estimate", str(write(tmp_path / "i32.gguf", gguf.GGUFWriter.add_int32)), "-c", "512"])
    assert bad.exit_code == 3
    assert "key llama.block_count has wrong type i32 but expected type u32" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


def _string_array(lengths: list[int], then: bytes = b"") -> bytes:
    """A GGUF header with one string array of strings of these lengths (the bytes of string i: i % 251), and
    ``then`` (more key-values) after it."""
    body = b"".join(struct.pack("<Q", n) + bytes([i % 251]) * n for i, n in enumerate(lengths))
    key = b"tokenizer.ggml.tokens"
    kv_ = struct.pack("<Q", len(key)) + key + struct.pack("<IIQ", 9, 8, len(lengths)) + body
    return b"GGUF" + struct.pack("<IQQ", 3, 0, 2 if then else 1) + kv_ + then


@pytest.mark.parametrize(
    "long_at",
    [[], [0], [255, 256, 257], [60_000], [69_999]],  # long strings where a run of 256 starts, ends, the last
)
def test_long_string_arrays_skip_in_runs_exactly(long_at: list[int]) -> None:
    """Arrays of 50,000+ strings are skipped in runs of 256 by one regular expression; a run holding a string of
    128 bytes or more (which the expression does not match) is walked string by string: the same end either way,
    so the key-value after the array reads back."""
    import random

    rnd = random.Random(len(long_at))
    lengths = [rnd.choice((0, 1, 3, 7, 8, 12, 127)) for _ in range(70_000)]
    for i in long_at:
        lengths[i] = 128 + i % 1000
    name = b"general.name"
    then = struct.pack("<Q", len(name)) + name + struct.pack("<IQ", 8, 4) + b"next"
    data = _string_array(lengths, then)
    f = parse_gguf(data, "t.gguf", len(data), check_data_bounds=False)
    assert f.kv["tokenizer.ggml.tokens"].count == 70_000 and f.kv["general.name"] == "next"


@pytest.mark.parametrize("cut", [8, 300, 5_000, 250_000])
def test_long_string_arrays_truncated_name_the_element(cut: int, tmp_path: Path) -> None:
    """A file that ends inside a long string array: the exact element whose length or bytes are missing."""
    lengths = [5] * 60_000  # 13 bytes a string, after a 69-byte header
    data = _string_array(lengths)
    end = len(data) - cut
    (tmp_path / "t.gguf").write_bytes(data[:end])
    with pytest.raises(GGUFError) as e:
        read_gguf(tmp_path / "t.gguf")
    element = (end - 69) // 13
    assert f"element {element}" in str(e.value)
