"""Record vLLM 0.33.0's max_model_len for every engine config and the context-rule variants below
(tests/fixtures/engines/vllm_max_len.json; the variants' configs are written to tests/fixtures/engines/max_len/).

usage: python3 scripts/engines/record_vllm_max_len.py VLLM_VENV_PYTHON
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "tests" / "fixtures" / "engines" / "configs"
VARIANTS = ROOT / "tests" / "fixtures" / "engines" / "max_len"
OUT = ROOT / "tests" / "fixtures" / "engines" / "vllm_max_len.json"


def _llama(**extra: object) -> dict[str, object]:
    base = json.loads((CONFIGS / "llama-3.1-8b" / "config.json").read_text())
    base.pop("rope_scaling", None)
    base["max_position_embeddings"] = 4096
    base.update(extra)
    return base


#: variant → its config.json: each exercises one rule of _get_and_verify_max_len / derive_max_model_len_and_key
VARIANT_CONFIGS: dict[str, dict[str, object]] = {
    # Command-R: model_max_length (131,072) overrides max_position_embeddings (8,192)
    "cohere-model-max-length": {
        "architectures": ["CohereForCausalLM"], "model_type": "cohere", "hidden_size": 8192,
        "num_hidden_layers": 40, "num_attention_heads": 64, "num_key_value_heads": 64, "intermediate_size": 22528,
        "vocab_size": 256000, "max_position_embeddings": 8192, "model_max_length": 131072, "torch_dtype": "float16",
    },
    "llama-rope-linear-4": _llama(rope_scaling={"rope_type": "linear", "factor": 4.0}),
    "llama-rope-dynamic-2": _llama(rope_scaling={"rope_type": "dynamic", "factor": 2.0}),
    "llama-rope-yarn-4": _llama(max_position_embeddings=32768,
                                rope_scaling={"rope_type": "yarn", "factor": 4.0,
                                              "original_max_position_embeddings": 8192}),
    "llama-no-scaling": _llama(),
    "llama-seq-length-smaller": _llama(seq_length=2048),
    "phi3-longrope": {
        "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "hidden_size": 3072, "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 32, "intermediate_size": 8192, "vocab_size": 32064,
        "max_position_embeddings": 131072, "original_max_position_embeddings": 4096,
        "rope_scaling": {"type": "longrope", "long_factor": [1.0] * 48, "short_factor": [1.0] * 48},
        "sliding_window": 262144, "torch_dtype": "bfloat16",
    },
}  # fmt: skip


def cases() -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for folder in sorted(p for p in CONFIGS.iterdir() if p.is_dir()):
        for asked in (None, 4096, 1 << 24):
            case: dict[str, object] = {"id": f"{folder.name}@{asked}", "model": str(folder)}
            if asked is not None:
                case["max_model_len"] = asked
            out.append(case)
    for name in sorted(VARIANT_CONFIGS):
        for asked in (None, 4096, 8192, 16384, 16385, 131072, 131073):
            case = {"id": f"{name}@{asked}", "model": str(VARIANTS / name)}
            if asked is not None:
                case["max_model_len"] = asked
            out.append(case)
    for asked in (None, 4096, 4097):  # Mistral's window with --disable-sliding-window
        case = {"id": f"mistral-7b-v0.1-no-window@{asked}", "model": str(CONFIGS / "mistral-7b-v0.1"),
                "disable_sliding_window": True}  # fmt: skip
        if asked is not None:
            case["max_model_len"] = asked
        out.append(case)
    return out


def main() -> None:
    python = sys.argv[1]
    for name, cfg in VARIANT_CONFIGS.items():
        (VARIANTS / name).mkdir(parents=True, exist_ok=True)
        (VARIANTS / name / "config.json").write_text(json.dumps(cfg, indent=1) + "\n")
    todo = cases()
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(todo, fh)
    run = subprocess.run(
        [python, str(Path(__file__).with_name("vllm_max_len_case.py")), fh.name],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    answers = json.loads(run.stdout)
    for case, answer in zip(todo, answers, strict=True):
        case["model"] = str(Path(str(case["model"])).relative_to(ROOT))
        case["asked"] = case.pop("max_model_len", None)  # --max-model-len as given (None: not given)
        case.update({k: v for k, v in answer.items() if k != "id"})
    OUT.write_text(json.dumps({"vllm": "0.33.0", "cases": todo}, indent=1) + "\n")
    print(f"{len(todo)} cases → {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
