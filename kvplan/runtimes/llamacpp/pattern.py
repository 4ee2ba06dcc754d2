"""Tensor-name patterns (-ot PATTERN=BUFFER) as llama.cpp reads them — ``std::regex`` with its default ECMAScript
grammar, searched with ``std::regex_search`` — matched in time linear in the name, whatever the pattern.

A backtracking engine (Python's ``re``, and ``std::regex`` itself) takes exponential time on ``(a|aa)+b`` against a
long name; a deployments file or a pasted command line is someone else's text. Here a pattern is compiled to a
Thompson NFA and simulated over the name one state set per character, so a search costs at most
O(len(name) × states). What the grammar has that no automaton can do is refused with the reason:
back-references (``\\1``). Lookaheads (``(?=…)``, ``(?!…)``) are kept: each is a search of its own from the place
it is asked at (at most O(len(name)² × states)). A pattern may compile to at most ``MAX_STATES`` states (counted
repetitions expand), nest groups at most ``MAX_DEPTH`` deep and be at most ``MAX_PATTERN`` characters.

The grammar (ECMAScript, as ``std::regex`` parses it): alternation ``|``; groups ``(…)``, ``(?:…)``, ``(?=…)``,
``(?!…)``; quantifiers ``* + ? {n} {n,} {n,m}``, each optionally lazy (``?``: the same answer for a search);
anchors ``^ $`` (no multiline); ``\\b \\B``; ``.`` (anything but a line terminator); classes ``[…]`` / ``[^…]`` with
ranges and ``\\d \\D \\w \\W \\s \\S``; escapes ``\\f \\n \\r \\t \\v \\0 \\cX \\xHH \\uHHHH`` and a backslash before
any other character that is not a letter or digit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

MAX_PATTERN = 4096
MAX_STATES = 20_000
MAX_DEPTH = 100


class PatternError(ValueError):
    """A pattern that does not parse, or that kvplan will not match (the message says which)."""


# ---- character sets: (negated, ranges) over code points

_LINE_TERMINATORS = ((0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029))
_DIGIT = ((0x30, 0x39),)
_WORD = ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))
_SPACE = ((0x09, 0x0D), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A), (0x2028, 0x2029),
          (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000), (0xFEFF, 0xFEFF))  # fmt: skip


@dataclass(frozen=True)
class CharSet:
    """Code points in ``ranges`` (or, ``negated``, not in them); ``parts`` are negated classes (\\D \\W \\S)."""

    ranges: tuple[tuple[int, int], ...]
    negated: bool = False
    parts: tuple[tuple[tuple[int, int], ...], ...] = ()  # code points in none of these ranges are also in the set

    def __contains__(self, c: int) -> bool:
        inside = any(a <= c <= b for a, b in self.ranges) or any(
            not any(a <= c <= b for a, b in part) for part in self.parts
        )
        return inside != self.negated


def is_word(c: str) -> bool:
    return c.isascii() and (c.isalnum() or c == "_")


# ---- the syntax tree


@dataclass(frozen=True)
class Chars:
    chars: CharSet


@dataclass(frozen=True)
class Seq:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Alt:
    options: tuple[Node, ...]


@dataclass(frozen=True)
class Repeat:
    item: Node
    least: int
    most: int | None  # None: no limit


@dataclass(frozen=True)
class Assert:
    kind: str  # "^", "$", "b", "B"


@dataclass(frozen=True)
class Look:
    item: Node
    negated: bool


Node = Chars | Seq | Alt | Repeat | Assert | Look


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.depth = 0

    def error(self, message: str) -> PatternError:
        return PatternError(f"{message} at position {self.i}")

    def peek(self) -> str:
        return self.text[self.i] if self.i < len(self.text) else ""

    def take(self) -> str:
        c = self.peek()
        if not c:
            raise self.error("the pattern ends too early")
        self.i += 1
        return c

    def parse(self) -> Node:
        node = self.disjunction()
        if self.i != len(self.text):
            raise self.error("an unmatched )")
        return node

    def disjunction(self) -> Node:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.error(f"groups nested more than {MAX_DEPTH} deep")
        options = [self.alternative()]
        while self.peek() == "|":
            self.i += 1
            options.append(self.alternative())
        self.depth -= 1
        return options[0] if len(options) == 1 else Alt(tuple(options))

    def alternative(self) -> Node:
        items: list[Node] = []
        while self.peek() not in ("", "|", ")"):
            items.append(self.term())
        return items[0] if len(items) == 1 else Seq(tuple(items))

    def term(self) -> Node:
        c = self.peek()
        if c in ("^", "$"):
            self.i += 1
            return Assert(c)
        if c == "\\" and self.text[self.i + 1 : self.i + 2] in ("b", "B"):
            self.i += 2
            return Assert(self.text[self.i - 1])
        if c == "(" and self.text[self.i + 1 : self.i + 3] in ("?=", "?!"):
            negated = self.text[self.i + 2] == "!"
            self.i += 3
            inner = self.disjunction()
            if self.peek() != ")":
                raise self.error("an unclosed (")
            self.i += 1
            return Look(inner, negated)  # ECMAScript: a lookahead takes no quantifier
        atom = self.atom()
        return self.quantified(atom)

    def quantified(self, atom: Node) -> Node:
        c = self.peek()
        if c in ("*", "+", "?"):
            self.i += 1
            least, most = {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
        elif c == "{":
            least, most = self.braces()
        else:
            return atom
        if self.peek() == "?":  # lazy: the same answer for a search
            self.i += 1
        if self.peek() in ("*", "+", "?", "{"):
            raise self.error("nothing to repeat")
        return Repeat(atom, least, most)

    def braces(self) -> tuple[int, int | None]:
        start = self.i
        self.i += 1
        least = self.number()
        most: int | None = least
        if self.peek() == ",":
            self.i += 1
            most = self.number() if self.peek().isdigit() else None
        if least is None or self.peek() != "}":
            self.i = start
            raise self.error("a { that is not a repetition {n}, {n,} or {n,m}")
        self.i += 1
        if most is not None and most < least:
            raise self.error(f"a repetition {{{least},{most}}} whose bounds are out of order")
        return least, most

    def number(self) -> int | None:
        start = self.i
        while self.peek().isdigit():
            self.i += 1
        if self.i == start:
            return None
        if self.i - start > 6:
            raise self.error("a repetition count too large")
        return int(self.text[start : self.i])

    def atom(self) -> Node:
        c = self.take()
        if c == "(":
            if self.text.startswith("?:", self.i):
                self.i += 2
            elif self.peek() == "?":
                raise self.error("a group kind std::regex does not have (only (?: (?= (?!)")
            inner = self.disjunction()
            if self.peek() != ")":
                raise self.error("an unclosed (")
            self.i += 1
            return inner
        if c == ".":
            return Chars(CharSet(_LINE_TERMINATORS, negated=True))
        if c == "[":
            return Chars(self.char_class())
        if c == "\\":
            return Chars(self.escape(in_class=False))
        if c in ("*", "+", "?", "{"):
            self.i -= 1
            raise self.error("nothing to repeat")
        return Chars(CharSet(((ord(c), ord(c)),)))

    def escape(self, in_class: bool) -> CharSet:
        c = self.take()
        simple = {"f": 0x0C, "n": 0x0A, "r": 0x0D, "t": 0x09, "v": 0x0B}
        if c in simple:
            return CharSet(((simple[c], simple[c]),))
        if c == "b" and in_class:
            return CharSet(((8, 8),))
        classes = {"d": _DIGIT, "w": _WORD, "s": _SPACE}
        if c in classes:
            return CharSet(classes[c])
        if c.lower() in classes:
            return CharSet((), parts=(classes[c.lower()],))
        if c == "0" and not self.peek().isdigit():
            return CharSet(((0, 0),))
        if c.isdigit():
            raise self.error("a back-reference (\\1 …): no automaton can match it in linear time; kvplan refuses it")
        if c == "c" and self.peek().isascii() and self.peek().isalpha():
            v = ord(self.take()) % 32
            return CharSet(((v, v),))
        if c in ("x", "u"):
            n = 2 if c == "x" else 4
            digits = self.text[self.i : self.i + n]
            if len(digits) != n or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise self.error(f"\\{c} needs {n} hexadecimal digits")
            self.i += n
            v = int(digits, 16)
            return CharSet(((v, v),))
        if c.isalnum() or c == "_":
            raise self.error(f"an unknown escape \\{c}")
        return CharSet(((ord(c), ord(c)),))

    def char_class(self) -> CharSet:
        negated = self.peek() == "^"
        if negated:
            self.i += 1
        ranges: list[tuple[int, int]] = []
        parts: list[tuple[tuple[int, int], ...]] = []
        while True:
            c = self.take()
            if c == "]":
                return CharSet(tuple(ranges), negated, tuple(parts))
            low = self.class_atom(c)
            if self.peek() == "-" and self.text[self.i + 1 : self.i + 2] not in ("]", ""):
                self.i += 1
                high = self.class_atom(self.take())
                if low.parts or high.parts or len(low.ranges) != 1 or len(high.ranges) != 1:
                    raise self.error("a range with a class (\\d, \\w, \\s) at one end")
                a, b = low.ranges[0][0], high.ranges[0][0]
                if a > b:
                    raise self.error("a range out of order")
                ranges.append((a, b))
            else:
                ranges.extend(low.ranges)
                parts.extend(low.parts)

    def class_atom(self, c: str) -> CharSet:
        if c == "\\":
            return self.escape(in_class=True)
        return CharSet(((ord(c), ord(c)),))


# ---- the automaton: states of a Thompson NFA

CHAR, SPLIT, ASSERT, LOOK, MATCH = range(5)


@dataclass
class _Program:
    op: list[int] = field(default_factory=list)
    nxt: list[int] = field(default_factory=list)
    chars: dict[int, CharSet] = field(default_factory=dict)
    splits: dict[int, tuple[int, int]] = field(default_factory=dict)
    asserts: dict[int, str] = field(default_factory=dict)
    looks: dict[int, tuple[_Program, int, bool]] = field(default_factory=dict)  # sub-program, its start, negated
    states: list[int] = field(default_factory=lambda: [0])  # shared with the lookaheads' programs

    def emit(self, op: int, nxt: int = -1) -> int:
        self.states[0] += 1
        if self.states[0] > MAX_STATES:
            raise PatternError(f"the pattern needs more than {MAX_STATES:,} states (counted repetitions expand)")
        self.op.append(op)
        self.nxt.append(nxt)
        return len(self.op) - 1


def _compile(node: Node, prog: _Program, follow: int) -> int:
    """The entry state of ``node`` whose exit goes to ``follow``."""
    if isinstance(node, Chars):
        pc = prog.emit(CHAR, follow)
        prog.chars[pc] = node.chars
        return pc
    if isinstance(node, Seq):
        for item in reversed(node.items):
            follow = _compile(item, prog, follow)
        return follow
    if isinstance(node, Alt):
        entries = [_compile(o, prog, follow) for o in node.options]
        entry = entries[-1]
        for e in reversed(entries[:-1]):
            entry = _split(prog, e, entry)
        return entry
    if isinstance(node, Assert):
        pc = prog.emit(ASSERT, follow)
        prog.asserts[pc] = node.kind
        return pc
    if isinstance(node, Look):
        sub = _Program(states=prog.states)
        start = _compile(node.item, sub, sub.emit(MATCH))
        pc = prog.emit(LOOK, follow)
        prog.looks[pc] = (sub, start, node.negated)
        return pc
    # a repetition: the optional copies after the required ones, built from the end
    if node.most is None:
        loop = _split(prog, -1, follow)
        prog.splits[loop] = (_compile(node.item, prog, loop), follow)
        entry = loop
    else:
        entry = follow
        for _ in range(node.most - node.least):
            entry = _split(prog, _compile(node.item, prog, entry), follow)
    for _ in range(node.least):
        entry = _compile(node.item, prog, entry)
    return entry


def _split(prog: _Program, first: int, second: int) -> int:
    pc = prog.emit(SPLIT)
    prog.splits[pc] = (first, second)
    return pc


class _Run:
    """One search of one text: state sets position by position; each lookahead answered once per place."""

    def __init__(self, prog: _Program, text: str) -> None:
        self.prog = prog
        self.text = text
        self.looked: dict[tuple[int, int], bool] = {}

    def add(self, pc: int, i: int, into: list[int], seen: set[int]) -> bool:
        """Follow the states that consume nothing from ``pc`` at place ``i``; the character states go ``into``.
        True when a match is reached."""
        prog, stack = self.prog, [pc]
        while stack:
            pc = stack.pop()
            if pc in seen:
                continue
            seen.add(pc)
            op = prog.op[pc]
            if op == CHAR:
                into.append(pc)
            elif op == SPLIT:
                a, b = prog.splits[pc]
                stack += (b, a)
            elif op == MATCH:
                return True
            elif (op == ASSERT and _holds(prog.asserts[pc], self.text, i)) or (op == LOOK and self.look(pc, i)):
                stack.append(prog.nxt[pc])
        return False

    def look(self, pc: int, i: int) -> bool:
        key = (pc, i)
        if key not in self.looked:
            sub, start, negated = self.prog.looks[pc]
            self.looked[key] = _Run(sub, self.text).search(start, i, anywhere=False) != negated
        return self.looked[key]

    def search(self, start: int, pos: int, anywhere: bool) -> bool:
        """Whether the program matches at ``pos`` (``anywhere``: at ``pos`` or any later place)."""
        text, prog = self.text, self.prog
        current: list[int] = []
        seen: set[int] = set()
        for i in range(pos, len(text) + 1):
            if (anywhere or i == pos) and self.add(start, i, current, seen):
                return True
            if i == len(text) or not (current or anywhere):
                return False
            c = ord(text[i])
            nxt: list[int] = []
            seen = set()
            if any(c in prog.chars[pc] and self.add(prog.nxt[pc], i + 1, nxt, seen) for pc in current):
                return True
            current = nxt
        return False


def _holds(kind: str, text: str, i: int) -> bool:
    if kind == "^":
        return i == 0
    if kind == "$":
        return i == len(text)
    boundary = (i > 0 and is_word(text[i - 1])) != (i < len(text) and is_word(text[i]))
    return boundary if kind == "b" else not boundary


class _Dfa:
    """The same search for a pattern without assertions or lookaheads, its state sets built as names need them
    and kept (a lazily built DFA, as RE2 does): one dictionary lookup per character once warm. At most
    ``MAX_DFA_STATES`` sets are kept; past that the cache starts again (the answers stay the same)."""

    MAX_DFA_STATES = 4096

    def __init__(self, prog: _Program, start: int) -> None:
        self.prog, self.start = prog, start
        self.ids: dict[frozenset[int], int] = {}
        self.sets: list[tuple[int, ...]] = []
        self.matched: list[bool] = []
        self.moves: list[dict[str, int]] = []
        self.first = self._state(set())

    def _state(self, pcs: set[int]) -> int:
        """The set ``pcs`` with the start's closure added (a search may begin at any place)."""
        into: list[int] = []
        seen: set[int] = set()
        run = _Run(self.prog, "")
        matched = any(run.add(pc, 0, into, seen) for pc in (*pcs, self.start))
        key = frozenset(into)
        if matched:
            key = frozenset((-1,))
        found = self.ids.get(key)
        if found is not None:
            return found
        self.ids[key] = len(self.sets)
        self.sets.append(tuple(into))
        self.matched.append(matched)
        self.moves.append({})
        return len(self.sets) - 1

    def search(self, text: str) -> bool:
        if len(self.sets) + len(text) >= self.MAX_DFA_STATES:  # room for every set this search may add
            self.ids, self.sets, self.matched, self.moves = {}, [], [], []
            self.first = self._state(set())
        state = self.first
        if self.matched[state]:
            return True
        prog = self.prog
        for ch in text:
            nxt = self.moves[state].get(ch)
            if nxt is None:
                c = ord(ch)
                nxt = self.moves[state][ch] = self._state(
                    {prog.nxt[pc] for pc in self.sets[state] if c in prog.chars[pc]}
                )
            if self.matched[nxt]:
                return True
            state = nxt
        return False


@dataclass(frozen=True)
class Pattern:
    """A compiled pattern: ``search(name)`` answers as ``std::regex_search`` does, in linear time."""

    pattern: str
    search: Callable[[str], bool] = field(repr=False, compare=False)


def compile_pattern(text: str) -> Pattern:
    """``text`` compiled as std::regex compiles it (ECMAScript); PatternError says why not."""
    if len(text) > MAX_PATTERN:
        raise PatternError(f"a pattern of {len(text):,} characters (at most {MAX_PATTERN:,})")
    node = _Parser(text).parse()
    prog = _Program()
    start = _compile(node, prog, prog.emit(MATCH))
    if prog.asserts or prog.looks:
        return Pattern(text, lambda name: _Run(prog, name).search(start, 0, anywhere=True))
    return Pattern(text, _Dfa(prog, start).search)


def own_pattern(text: str) -> Pattern:
    """One of kvplan's own patterns (-ncmoe's, the fit's overflow rules: literals, one group of alternatives and a
    final ``.*``), whose backtracking search is linear: Python's ``re``, which answers as ECMAScript does on
    them and is faster than the automaton here by a few microseconds a name (a fit searches thousands)."""
    import re

    rx = re.compile(text)
    return Pattern(text, lambda name: rx.search(name) is not None)
