"""The compute graph's facts from a config.json (kvplan/sources/graph_facts.py): widths a converter derives are
derived as it does (the recorded conversions prove the values: tests/sources/test_hf_conversion.py); a config whose
derivation inputs are not what the converter reads gives no graph facts — never an exception."""

from __future__ import annotations

import pytest

from kvplan.sources.graph_facts import graph_facts_from_config

_OPENELM = {"architectures": ["OpenELMForCausalLM"], "model_type": "openelm", "ffn_dim_divisor": 256,
            "model_dim": 1024, "vocab_size": 1000}  # fmt: skip


def test_openelm_width_is_the_converters_make_divisible() -> None:
    # OpenELMModel._make_divisible(0.5 * 1024, 256) = 512; 1.3 * 1024 = 1331.2 rounds to 1280 (not 10 % down)
    facts = graph_facts_from_config({**_OPENELM, "ffn_multipliers": [0.5, 4.0]})
    assert facts is not None and facts.n_ff == 512
    facts = graph_facts_from_config({**_OPENELM, "ffn_multipliers": [1.3]})
    assert facts is not None and facts.n_ff == 1280


@pytest.mark.parametrize("bad", [["x"], [True], [float("nan")], [], "abc", [1e300], [-1.0], None])
def test_openelm_multipliers_that_are_not_numbers_give_no_facts(bad: object) -> None:
    assert graph_facts_from_config({**_OPENELM, "ffn_multipliers": bad}) is None
