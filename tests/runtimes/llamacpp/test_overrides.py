"""Tensor buffer overrides (kvplan/runtimes/llamacpp/overrides.py): the first pattern a name matches wins, as
llama.cpp's loader applies -ot then -ncmoe; the literal text a pattern's every match contains only skips names
that cannot match (a property test over patterns and names built from the characters that matter)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from kvplan.runtimes.llamacpp.overrides import destinations, literal_prefix
from kvplan.runtimes.llamacpp.pattern import compile_pattern

_KINDS = ("attn_q", "ffn_up_exps", "ffn_down_exps", "ffn_gate_exps", "ffn_norm", "attn_k")
NAMES = (
    *(f"blk.{il}.{t}.weight" for il in range(24) for t in _KINDS),
    "token_embd.weight",
    "output.weight",
    "output_norm.weight",
)


def test_the_first_rule_a_name_matches_wins() -> None:
    rules = [(compile_pattern(r"blk\.1\.ffn_up"), 0), (compile_pattern(r"ffn_.*_exps"), -1)]
    got = destinations(rules, NAMES)
    assert got["blk.1.ffn_up_exps.weight"] == 0
    assert got["blk.11.ffn_up_exps.weight"] == -1  # blk\.1\. does not match blk.11.
    assert got["blk.1.ffn_down_exps.weight"] == -1
    assert "blk.1.attn_q.weight" not in got
    assert sum(1 for d in got.values() if d == -1) == 24 * 3 - 1


def test_literal_prefixes_worked_by_hand() -> None:
    assert literal_prefix(r"blk\.12\.ffn_(up|down|gate|gate_up)_(ch|)exps") == "blk.12.ffn_"
    assert literal_prefix(r"ab*c") == "a"  # b may be absent
    assert literal_prefix(r"x+y") == "x"
    assert literal_prefix(r"a|b") == ""  # either side alone matches
    assert literal_prefix(r"^blk") == ""
    assert literal_prefix(r"[ab]c") == ""
    assert literal_prefix(r"blk\.\d+\.ffn") == "blk."


_PIECES = ["blk", r"\.", "1", "2", "ffn_", "up", "exps", "weight", ".", "*", "+", "?", "|", "(", ")", "[ab]",
           r"\d", "{2}", "^", "$", "_", "a", "b"]  # fmt: skip


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=8))
def test_the_literal_never_skips_a_name_the_pattern_matches(pieces: list[str]) -> None:
    pattern = "".join(pieces)
    try:
        rx = re.compile(pattern)
    except re.error:
        return
    lit = literal_prefix(pattern)
    for name in (*NAMES, "ab", "blk.12.ffn_up_exps", "a_b", "1+2", "blk..ffn_"):
        if rx.search(name):
            assert lit in name, (pattern, lit, name)


_LAYER_PIECES = ["blk", r"\.", "1", "2", "12", "ffn_", "up", "exps", r"\d+", ".*", "_", "x"]
_ODD_NAMES = ("blk.1.blk.12.ffn_up_exps", "xblk.12.ffn_up", "blk.12.", "blk.112.ffn_up_exps", "blk.1.2.ffn_up")


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_LAYER_PIECES), min_size=1, max_size=8))
def test_searching_a_layers_names_alone_finds_what_searching_every_name_finds(pieces: list[str]) -> None:
    """A pattern whose literal begins "blk.N." is searched only in the names with "blk.N." in them (a fit's -ncmoe
    patterns, one per layer): the matches are every name's that the pattern matches, odd names included."""
    from kvplan.runtimes.llamacpp.overrides import _matched

    pattern = "".join(pieces)
    try:
        re.compile(pattern)
    except re.error:
        return
    names = (*NAMES, *_ODD_NAMES)
    rx = compile_pattern(pattern)
    assert _matched(rx, names) == frozenset(n for n in names if rx.search(n))
