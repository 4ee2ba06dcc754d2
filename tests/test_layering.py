"""The layers of the package depend one way: sources → model → runtimes → capacity → simulate → report → render → cli.
No module names an engine outside the engine's own module, and the library never prints."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent / "kvplan"
#: what each layer may import from kvplan (besides errors, units, model, facts, which everything may use)
ALLOWED = {
    "sources": {"sources"},
    "runtimes": {"runtimes"},
    "analysis": {"analysis", "runtimes", "sources"},
    "capacity": {"capacity", "runtimes", "sources"},
    "checks": {"checks", "capacity", "runtimes", "simulation", "sources"},
    "simulation": {"simulation", "capacity", "runtimes", "sources"},
    "report": {"report", "analysis", "capacity", "checks", "runtimes", "simulation"},
    "render": {"render", "report"},
    "cli": {"cli", "analysis", "capacity", "checks", "render", "report", "runtimes", "simulation", "sources"},
}
BASE = {"errors", "units", "model", "facts", "__init__"}


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kvplan"):
            parts = node.module.split(".")
            found.add(parts[1] if len(parts) > 1 else "__init__")
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("kvplan.")}
    return found


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_layers_import_only_what_is_below_them(layer: str) -> None:
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        wrong = _imports(path) - ALLOWED[layer] - BASE
        assert not wrong, f"{path.relative_to(PACKAGE.parent)} imports {sorted(wrong)}"


def test_engine_names_live_in_their_own_modules() -> None:
    engines = ("vllm", "sglang", "trtllm")
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.parent.name == "engines" and path.stem in engines:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare):
                for side in [node.left, *node.comparators]:
                    if isinstance(side, ast.Constant) and side.value in engines:
                        pytest.fail(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} compares with {side.value!r}")


def test_the_library_never_prints_or_exits() -> None:
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.parent.name == "cli" or path.name == "__main__.py":
            continue
        text = path.read_text()
        for name in ("print(", "sys.exit(", "sys.stdout", "sys.stderr.write"):
            assert name not in text or (path.name == "remote.py" and name == "sys.stderr.write"), (path, name)
