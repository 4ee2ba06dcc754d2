"""Tensor buffer overrides (-ot, -ncmoe / -cmoe) as llama.cpp's loader applies them: the first pattern a tensor's
name matches (std::regex_search, matched in linear time by ``pattern``) decides its buffer. A fit places the same
tensors many ways with patterns it reuses (-ncmoe N is N fixed patterns), so each pattern's matches are found once
per set of names and kept."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from types import MappingProxyType

from kvplan.runtimes.llamacpp.pattern import Pattern, compile_pattern, own_pattern

#: pattern → (the names it was matched against, the ones it matches); the names are kept so that a key is never
#: answered for another tuple that reused a freed one's id
_MATCHES: dict[tuple[str, int], tuple[tuple[str, ...], frozenset[str]]] = {}
_KEPT = 4096


#: the patterns kvplan writes itself (-ncmoe's, the fit's overflow rules), searched by the faster own_pattern
_OWN: set[str] = set()


def own(text: str) -> str:
    """``text``, one of kvplan's own patterns, marked as such (the same text typed by a user is as safe)."""
    if len(_OWN) < 65536:
        _OWN.add(text)
    return text


@lru_cache(maxsize=4096)
def compiled(text: str) -> Pattern:
    """``text`` compiled once per process (a fit reuses -ncmoe's patterns for every placement it tries); a user's
    pattern by the linear-time automaton, kvplan's own by own_pattern."""
    return own_pattern(text) if text in _OWN else compile_pattern(text)


#: the names, by each "blk.N." they contain: a pattern whose literal begins with one is searched in those alone
_BY_LAYER: dict[int, tuple[tuple[str, ...], dict[str, tuple[str, ...]]]] = {}
_LAYER_IN_NAME = re.compile(r"blk\.\d+\.")


def _candidates(names: tuple[str, ...], lit: str) -> Sequence[str]:
    """The names that can contain ``lit``: where it begins "blk.N.", only the names with that in them (a fit's
    -ncmoe patterns are one per layer, each against every tensor name: 94 × 1,400 searches on a 94-layer MoE)."""
    layer = _LAYER_IN_NAME.match(lit)
    if layer is None:
        return names
    hit = _BY_LAYER.get(id(names))
    if hit is None or hit[0] is not names:
        buckets: dict[str, list[str]] = {}
        for n in names:
            for key in dict.fromkeys(_LAYER_IN_NAME.findall(n)):
                buckets.setdefault(key, []).append(n)
        if len(_BY_LAYER) >= 64:
            del _BY_LAYER[next(iter(_BY_LAYER))]
        hit = _BY_LAYER[id(names)] = (names, {k: tuple(v) for k, v in buckets.items()})
    return hit[1].get(layer.group(0), ())


def _matched(pattern: Pattern, names: tuple[str, ...]) -> frozenset[str]:
    key = (pattern.pattern, id(names))
    hit = _MATCHES.get(key)
    if hit is not None and hit[0] is names:
        return hit[1]
    lit = literal_prefix(pattern.pattern)
    found = frozenset(n for n in _candidates(names, lit) if lit in n and pattern.search(n))
    if len(_MATCHES) >= _KEPT:
        del _MATCHES[next(iter(_MATCHES))]
    _MATCHES[key] = (names, found)
    return found


_META = frozenset(".^$*+?{}[]|()")


def _alternates(pattern: str) -> bool:
    """Whether the pattern has a top-level `|` (outside groups and character classes)."""
    depth, i, in_class = 0, 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c in "()":
            depth += 1 if c == "(" else -1
        elif c == "|" and depth == 0:
            return True
        i += 1
    return False


def literal_prefix(pattern: str) -> str:
    """Text every match of the pattern contains: its opening literal characters (escaped punctuation included)
    up to the first operator, less a character a quantifier may repeat zero times; "" where a top-level
    alternation could match without it. Names without it are not searched (-ncmoe 90 is 90 patterns over every
    tensor name)."""
    if _alternates(pattern):
        return ""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern) and not pattern[i + 1].isalnum():
            out.append(pattern[i + 1])
            i += 2
            continue
        if c == "\\" or c in _META:
            if c in "*?{" and out:
                out.pop()
            break
        out.append(c)
        i += 1
    return "".join(out)


def destinations(rules: Sequence[tuple[Pattern, int]], names: tuple[str, ...]) -> Mapping[str, int]:
    """Each name some rule matches → the destination of the first rule that matches it (read-only: the last few
    answers are shared, since a fit asks for each placement's several times)."""
    key = (tuple(rules), id(names))
    hit = _DESTINATIONS.get(key)
    if hit is not None and hit[0] is names:
        return hit[1]
    out: dict[str, int] = {}
    for pattern, dest in reversed(rules):  # the first rule's answer written last wins
        for name in _matched(pattern, names):
            out[name] = dest
    if len(_DESTINATIONS) >= 16:
        del _DESTINATIONS[next(iter(_DESTINATIONS))]
    _DESTINATIONS[key] = (names, MappingProxyType(out))
    return _DESTINATIONS[key][1]


_DESTINATIONS: dict[tuple[tuple[tuple[Pattern, int], ...], int], tuple[tuple[str, ...], Mapping[str, int]]] = {}
