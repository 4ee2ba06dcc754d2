import gguf

from kvplan.facts.ggml_types import GGML_TYPES_BY_ID, LLAMA_CPP_CACHE_TYPES, cache_type

# Where kvplan's table deliberately differs from the gguf package (0.19.0):
#  - q8_1: gguf-py says 40 bytes per block (two f32 scales); ggml's block_q8_1 (ggml-common.h) holds two
#    ggml_half, 36 bytes, and llama.cpp sizes tensors with ggml's value.
#  - q2_0 (id 42): newer than gguf 0.19.0's enum.
KNOWN_DIFFERENCES = {9: ((32, 36), (32, 40))}
NOT_IN_GGUF_PACKAGE = {42}


def test_table_equals_gguf_package() -> None:
    theirs = {int(t): (blk, size) for t, (blk, size) in gguf.GGML_QUANT_SIZES.items()}
    ours = {t.id: (t.block_elements, t.block_bytes) for t in GGML_TYPES_BY_ID.values()}
    assert set(ours) - set(theirs) == NOT_IN_GGUF_PACKAGE
    for type_id, size in theirs.items():
        if type_id in KNOWN_DIFFERENCES:
            assert (ours[type_id], size) == KNOWN_DIFFERENCES[type_id]
        else:
            assert ours[type_id] == size, type_id
            assert gguf.GGMLQuantizationType(type_id).name.lower() == GGML_TYPES_BY_ID[type_id].name


def test_row_bytes_is_ggml_row_size() -> None:
    assert cache_type("f16").row_bytes(1024) == 2048
    assert cache_type("q8_0").row_bytes(1024) == 1088
    assert cache_type("q4_0").row_bytes(576) == 324
    assert [cache_type(n).name for n in LLAMA_CPP_CACHE_TYPES] == list(LLAMA_CPP_CACHE_TYPES)
