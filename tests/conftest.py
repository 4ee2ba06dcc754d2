from __future__ import annotations

import json
from functools import cache
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
ORACLE = FIXTURES / "oracle"


@cache
def oracle_cases() -> dict:
    return json.loads((ORACLE / "cases.json").read_text())
