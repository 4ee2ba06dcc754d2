"""Tensor buffer overrides (-ot, -ncmoe / -cmoe) as llama.cpp's loader applies them: the first pattern a tensor's
name matches (std::regex_search) decides its buffer. A fit places the same tensors many ways with patterns it
reuses (-ncmoe N is N fixed patterns), so each pattern's matches are found once per set of names and kept."""

from __future__ import annotations

import re
from collections.abc import Sequence

#: pattern → (the names it was matched against, the ones it matches); the names are kept so that a key is never
#: answered for another tuple that reused a freed one's id
_MATCHES: dict[tuple[str, int], tuple[tuple[str, ...], frozenset[str]]] = {}
_KEPT = 4096


def _matched(pattern: re.Pattern[str], names: tuple[str, ...]) -> frozenset[str]:
    key = (pattern.pattern, id(names))
    hit = _MATCHES.get(key)
    if hit is not None and hit[0] is names:
        return hit[1]
    found = frozenset(n for n in names if pattern.search(n))
    if len(_MATCHES) >= _KEPT:
        del _MATCHES[next(iter(_MATCHES))]
    _MATCHES[key] = (names, found)
    return found


def destinations(rules: Sequence[tuple[re.Pattern[str], int]], names: tuple[str, ...]) -> dict[str, int]:
    """Each name some rule matches → the destination of the first rule that matches it."""
    out: dict[str, int] = {}
    for pattern, dest in reversed(rules):  # the first rule's answer written last wins
        for name in _matched(pattern, names):
            out[name] = dest
    return out
