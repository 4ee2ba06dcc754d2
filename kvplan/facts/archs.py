"""Per-architecture facts of llama.cpp (llama-cpp-python 0.3.36's vendored llama.cpp, 2026-10-01).

Data only: which architectures llama.cpp knows, which memory module each creates, and how each
decides its sliding-window layers. Sources: src/llama-arch.cpp (names, recurrent/hybrid lists),
src/llama-model.cpp create_memory, src/models/<arch>.cpp load_arch_hparams.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.model import MemoryKind, SwaType

#: LLM_ARCH_NAMES (src/llama-arch.cpp), minus the "clip" dummy.
KNOWN_ARCHS: frozenset[str] = frozenset(
    [
        "llama",
        "llama4",
        "deci",
        "falcon",
        "grok",
        "gpt2",
        "gptj",
        "gptneox",
        "mpt",
        "baichuan",
        "starcoder",
        "refact",
        "bert",
        "modern-bert",
        "nomic-bert",
        "nomic-bert-moe",
        "neo-bert",
        "jina-bert-v2",
        "jina-bert-v3",
        "eurobert",
        "bloom",
        "stablelm",
        "qwen",
        "qwen2",
        "qwen2moe",
        "qwen2vl",
        "qwen3",
        "qwen3moe",
        "qwen3next",
        "qwen3vl",
        "qwen3vlmoe",
        "qwen35",
        "qwen35moe",
        "qwen4exp",
        "phi2",
        "phi3",
        "phimoe",
        "plamo",
        "plamo2",
        "plamo3",
        "codeshell",
        "orion",
        "internlm2",
        "minicpm",
        "minicpm3",
        "gemma",
        "gemma2",
        "gemma3",
        "gemma3n",
        "gemma4",
        "gemma4-assistant",
        "gemma-embedding",
        "starcoder2",
        "mamba",
        "mamba2",
        "maple",
        "jamba",
        "falcon-h1",
        "xverse",
        "command-r",
        "cohere2",
        "cohere2moe",
        "dbrx",
        "olmo",
        "olmo2",
        "olmoe",
        "muse-glimmer",
        "openelm",
        "arctic",
        "deepseek",
        "deepseek2",
        "deepseek2-ocr",
        "deepseek32",
        "deepseek4",
        "chatglm",
        "glm4",
        "glm4moe",
        "glm-dsa",
        "bitnet",
        "t5",
        "t5encoder",
        "jais",
        "jais2",
        "nemotron",
        "nemotron_h",
        "nemotron_h_moe",
        "exaone",
        "exaone4",
        "exaone-moe",
        "rwkv6",
        "rwkv6qwen2",
        "rwkv7",
        "arwkv7",
        "granite",
        "granitemoe",
        "granitehybrid",
        "graniteswitch",
        "granite_swa",
        "chameleon",
        "wavtokenizer-dec",
        "plm",
        "bailingmoe",
        "bailingmoe2",
        "bailingmoe3",
        "dots1",
        "dots3note",
        "arcee",
        "afmoe",
        "laguna",
        "ernie4_5",
        "ernie4_5-moe",
        "hunyuan-moe",
        "hunyuan-dense",
        "hunyuan_vl",
        "hy_v3",
        "hy_v4",
        "smollm3",
        "gpt-oss",
        "lfm2",
        "lfm2moe",
        "dream",
        "smallthinker",
        "llada",
        "llada-moe",
        "seed_oss",
        "grovemoe",
        "apertus",
        "minimax-01",
        "hrm_text",
        "minimax-m2",
        "minimax-m3",
        "cogvlm",
        "rnd1",
        "pangu-embedded",
        "mistral3",
        "eagle3",
        "dflash",
        "mistral4",
        "paddleocr",
        "mimo2",
        "step35",
        "spark2_5",
        "llama-embed",
        "maincoder",
        "kimi-linear",
        "kimi-k3",
        "glm5-next",
        "talkie",
        "mellum",
        "nanbeige",
        "qwen3tts",
        "pockettts",
    ]
)

#: GGUF writes "gpt-oss" but llama.cpp's arch enum is OPENAI_MOE with the same name string.
NO_MEMORY_ARCHS = frozenset(
    [
        "bert",
        "jina-bert-v2",
        "jina-bert-v3",
        "nomic-bert",
        "nomic-bert-moe",
        "neo-bert",
        "eurobert",
        "wavtokenizer-dec",
        "modern-bert",
        "gemma-embedding",
        "dream",
        "llada",
        "llada-moe",
        "rnd1",
    ]
)
RECURRENT_ARCHS = frozenset(["mamba", "mamba2", "rwkv6", "rwkv6qwen2", "rwkv7", "arwkv7"])
HYBRID_ARCHS = frozenset(
    [
        "jamba",
        "falcon-h1",
        "plamo2",
        "granitehybrid",
        "lfm2",
        "lfm2moe",
        "nemotron_h",
        "nemotron_h_moe",
        "qwen3next",
        "kimi-linear",
        "bailingmoe3",
        "kimi-k3",
        "glm5-next",
        "qwen35",
        "qwen35moe",
        "qwen4exp",
        "deepseek4",
        "minimax-01",
    ]
)
#: architectures that keep n_rs_seq (llm_arch_supports_rs_rollback); all others clamp it to 0
RS_ROLLBACK_ARCHS = frozenset(
    [
        "kimi-k3",
        "qwen35",
        "qwen35moe",
        "qwen4exp",
        "deepseek4",
        "glm5-next",
        "nemotron_h",
        "nemotron_h_moe",
        "lfm2",
        "lfm2moe",
        "bailingmoe3",
    ]
)
#: archs whose load_arch_hparams reads the MLA head sizes (is_mla() when both are non-zero);
#: mistral4 inherits deepseek2's loader
MLA_KEY_ARCHS = frozenset(
    [
        "deepseek2",
        "deepseek32",
        "glm-dsa",
        "dots3note",
        "hy_v4",
        "bailingmoe3",
        "kimi-linear",
        "kimi-k3",
        "glm5-next",
        "mistral4",
    ]
)
#: architectures whose graph has an MTP draft head (LLM_GRAPH_TYPE_DECODER_MTP in src/models/*.cpp);
#: mistral4 inherits deepseek2's graph. GLM5-Next has the branch but throws "not implemented yet".
MTP_GRAPH_ARCHS = frozenset(
    """bailingmoe3 cohere2moe deepseek2 mistral4 deepseek32 deepseek4 glm-dsa glm4moe hy_v3 mimo2
    nemotron_h_moe qwen35 qwen35moe qwen3next step35""".split()
)
#: llama_init_from_model forces flash attention off for these
FA_DISABLED_ARCHS = frozenset({"grok"})


def memory_kind(arch: str, kv: dict[str, object]) -> MemoryKind:
    """The memory module create_memory builds for a DEFAULT context of this architecture."""
    if arch in NO_MEMORY_ARCHS:
        return MemoryKind.NONE
    if arch == "minimax-m3":
        return MemoryKind.MSA
    if arch in ("glm-dsa", "deepseek32"):
        return MemoryKind.DSA
    if arch == "glm5-next":
        return MemoryKind.HYBRID_IDX
    if arch == "hy_v4":
        top_k = kv.get(f"{arch}.attention.indexer.top_k", 0)
        return MemoryKind.DSA if isinstance(top_k, int) and top_k > 0 else MemoryKind.KV
    if arch == "dots3note":
        return MemoryKind.DSA_ISWA
    if arch == "deepseek4":
        return MemoryKind.DSV4
    if arch in RECURRENT_ARCHS:
        return MemoryKind.RECURRENT
    if arch == "qwen4exp":
        return MemoryKind.HYBRID_IDX
    if arch in HYBRID_ARCHS:
        return MemoryKind.HYBRID
    return MemoryKind.KV


@dataclass(frozen=True)
class SwaRule:
    """How load_arch_hparams sets the sliding-window layers of one architecture.

    when: "always" (SWA whatever the keys say), "key>0" (only if sliding_window is present and > 0),
          "found" (present; llama4: chunked unless the key is present and 0), "n_layer==64" (exaone4)
    pattern: default period passed to load_swa_pattern (a GGUF array or scalar overrides it),
             or None when the per-layer array is required (get_arr)
    """

    when: str
    swa_type: SwaType
    pattern: int | None
    dense_first: bool = False
    window_default: int | None = None  # n_swa used when the key is absent (None: key required)
    window_forced: int | None = None  # n_swa set regardless of the key


S, C = SwaType.STANDARD, SwaType.CHUNKED
SWA_RULES: dict[str, SwaRule] = {
    "gemma2": SwaRule("always", S, 2, window_default=4096),
    "gemma3": SwaRule("key>0", S, 6),
    "gemma3n": SwaRule("always", S, 5),
    "gemma4": SwaRule("always", S, None),
    "gemma4-assistant": SwaRule("always", S, None),
    "cohere2": SwaRule("always", S, 4),
    "cohere2moe": SwaRule("always", S, 4, dense_first=True),
    "gpt-oss": SwaRule("always", S, 2),
    "llama4": SwaRule("found", C, 4, window_forced=8192),
    "exaone4": SwaRule("n_layer==64", S, 4, window_default=4096),
    "exaone-moe": SwaRule("always", S, 4),
    "olmo2": SwaRule("key>0", S, 4),
    "afmoe": SwaRule("key>0", S, 4),
    "mellum": SwaRule("key>0", S, 4),
    "muse-glimmer": SwaRule("always", S, 4),
    "smallthinker": SwaRule("key>0", S, 4, dense_first=True, window_forced=4096),
    "laguna": SwaRule("key>0", S, 4, dense_first=True),
    "plamo3": SwaRule("key>0", S, 8),
    "granite_swa": SwaRule("always", S, None),
    "maple": SwaRule("always", S, None),
    "mimo2": SwaRule("always", S, None),
    "spark2_5": SwaRule("always", S, None),
    "step35": SwaRule("always", S, None),
    "dflash": SwaRule("key>0", S, None),
    "dots3note": SwaRule("always", S, None),
}
