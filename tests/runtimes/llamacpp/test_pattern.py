"""-ot patterns (kvplan/runtimes/llamacpp/pattern.py): std::regex's ECMAScript grammar searched in linear time. The
answers equal Python's backtracking ``re`` wherever the two grammars agree (a property test over patterns built
from every construct), differ where ECMAScript differs (worked by hand), and a pattern that makes a backtracking
engine run for ages answers at once — on the library, the command line and a deployments file."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from gguf_files import GENERATED, with_tensors
from helpers import kv
from hypothesis import given, settings
from hypothesis import strategies as st

import kvplan
from kvplan.runtimes.llamacpp.pattern import MAX_STATES, PatternError, compile_pattern

_ATOMS = ["a", "b", "c", "1", "_", ".", r"\.", "[ab]", "[^a]", "[a-c1]", r"\d", r"\w", r"\W", r"\s", r"[\d_]"]


@st.composite
def patterns(draw: st.DrawFn, depth: int = 0) -> str:
    out = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.integers(0, 9)) if depth < 3 else 0
        if kind == 1:
            atom = "(" + draw(patterns(depth + 1)) + ")"
        elif kind == 2:
            atom = "(?:" + draw(patterns(depth + 1)) + "|" + draw(patterns(depth + 1)) + ")"
        elif kind == 3:
            out.append("(?" + draw(st.sampled_from("=!")) + draw(patterns(depth + 1)) + ")")
            continue
        else:
            atom = draw(st.sampled_from(_ATOMS))
        atom += draw(st.sampled_from(["", "", "", "*", "+", "?", "{2}", "{1,2}", "{0,}", "*?", "+?"]))
        out.append(atom)
    anchors = draw(st.sampled_from(["", "", "^", r"\b"])), draw(st.sampled_from(["", "", "$", r"\b", r"\B"]))
    return anchors[0] + "".join(out) + anchors[1]


@settings(max_examples=600, deadline=None)
@given(patterns(), st.lists(st.text("abc1_. x", max_size=10), min_size=1, max_size=8))
def test_searches_equal_a_backtracking_engine(pattern: str, texts: list[str]) -> None:
    mine, theirs = compile_pattern(pattern), re.compile(pattern)
    for text in texts:
        if not text and r"\B" in pattern:
            continue  # Python's \B never matches an empty text; ECMAScript's does (worked by hand below)
        assert mine.search(text) == bool(theirs.search(text)), (pattern, text)


@pytest.mark.parametrize(
    ("pattern", "text", "found"),
    [
        (r"blk\.(1[0-9]|2[0-9])\.ffn_.*_exps\.", "blk.15.ffn_up_exps.weight", True),
        (r"blk\.(1[0-9]|2[0-9])\.ffn_.*_exps\.", "blk.5.ffn_up_exps.weight", False),
        ("exps", "blk.0.ffn_down_exps.weight", True),
        (r"\.ffn_(up|down)_exps\.=", "blk.0.ffn_up_exps.=", True),
        # ECMAScript, not Python: \d and \w are ASCII, `.` stops at \r as at \n, ] and } alone are characters
        (r"\d", "٣", False),
        (r"\w", "é", False),
        ("a.b", "a\rb", False),
        ("a.b", "a\u2028b", False),
        ("a]}", "xa]}", True),
        (r"[\b]", "\b", True),
        (r"\cJ", "\n", True),
        (r"\x41\u0042", "AB", True),
        ("(?=ab)a", "ab", True),
        ("(?!ab)a", "ab", False),
        ("^$", "", True),
        ("(a{2}){0}", "", True),
        (r"\B", "", True),
    ],
)
def test_patterns_worked_by_hand(pattern: str, text: str, found: bool) -> None:
    assert compile_pattern(pattern).search(text) is found


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        (r"(a)\1", "back-reference"),
        ("(a", "an unclosed ("),
        ("a)", "an unmatched )"),
        ("*a", "nothing to repeat"),
        ("a**", "nothing to repeat"),
        ("a{2,1}", "out of order"),
        ("a{,3}", "not a repetition"),
        ("(?<=a)b", "a group kind std::regex does not have"),
        ("(?i)a", "a group kind std::regex does not have"),
        (r"\e", "an unknown escape"),
        ("[b-a]", "a range out of order"),
        (r"\xZZ", "hexadecimal digits"),
        ("(" * 150 + ")" * 150, "nested more than 100 deep"),
        ("(a{1000}){1000}", f"more than {MAX_STATES:,} states"),
        ("((?=a{5000})b){100}", f"more than {MAX_STATES:,} states"),
        ("a" * 5000, "at most 4,096"),
    ],
)
def test_refusals_say_why(pattern: str, message: str) -> None:
    with pytest.raises(PatternError, match=re.escape(message)):
        compile_pattern(pattern)


@pytest.mark.parametrize("pattern", ["(a|aa)+b", "(a*)*b", "(a+)+$b", "((a|a)*)*c", "(?=(a|aa)+b)a", "(\\w+\\w+)+!"])
def test_patterns_that_backtrack_answer_at_once(pattern: str) -> None:
    started = time.monotonic()
    assert compile_pattern(pattern).search("a" * 60) is False
    assert time.monotonic() - started < 0.5


def test_a_backtracking_pattern_on_the_command_line_and_in_a_deployments_file(tmp_path: Path) -> None:
    source, tensors = GENERATED["phi3-fused-qkv"]
    fixtures = Path(__file__).resolve().parents[2] / "fixtures" / "oracle"
    model = with_tensors(fixtures / source, tmp_path / "m.gguf", [*tensors, ("a" * 60, (4,))])
    started = time.monotonic()
    r = kv("fit", str(model), "--gpu", "RTX-4090", "-c", "4096", "-ot", "(a|aa)+b=CPU")
    assert r.exit_code == 0, r.stderr
    r = kv("fit", str(model), "--gpu", "RTX-4090", "-c", "4096", "-ot", r"(a)\1=CPU")
    assert r.exit_code == 2 and "back-reference" in r.stderr and r.stderr.count("\n") == 1
    deployments = tmp_path / "deployments.yaml"
    deployments.write_text(
        f"deployments:\n  - name: slow\n    model: {model}\n    gpu: RTX-4090\n    ctx_size: 4096\n"
        "    override_tensor: '(a|aa)+b=CPU'\n"
    )
    r = kv("check", str(deployments))
    assert r.exit_code == 0, r.stdout + r.stderr
    doc = kvplan.fit(str(model), gpu="RTX-4090", ctx_size=4096, override_tensor="(a|aa)+b=CPU")  # the library
    assert doc.exit_code == 0
    assert time.monotonic() - started < 20
