"""The layers of the package depend one way: sources → model → runtimes → capacity → analysis and simulation →
options (the table and the typed requests) → checks → report → render → commands (the library's commands) → api
and cli, side by side: the library never imports the command line. No module names an engine outside the engine's
own module, and nothing but the command line prints."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent / "kvplan"
#: what each layer may import from kvplan (besides errors, units, model, facts, which everything may use)
ALLOWED = {
    "sources": {"sources"},
    "runtimes": {"runtimes"},
    "analysis": {"analysis", "capacity", "runtimes", "sources"},  # (explain re-places a log's model on its devices)
    "capacity": {"capacity", "runtimes", "sources"},
    "simulation": {"simulation", "capacity", "runtimes", "sources"},
    "options": {"options", "analysis", "capacity", "runtimes", "simulation", "sources"},
    "checks": {"checks", "options", "capacity", "runtimes", "simulation", "sources"},
    "report": {"report", "analysis", "capacity", "checks", "runtimes", "simulation"},
    "render": {"render", "report"},
    "commands.py": {"analysis", "capacity", "checks", "options", "report", "runtimes", "simulation", "sources"},
    "api.py": {"commands", "options", "capacity", "report", "runtimes", "sources"},
    "cli": {"cli", "commands", "options", "capacity", "render", "report"},
}
BASE = {"errors", "units", "model", "facts", "progress", "__init__"}


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
    paths = [PACKAGE / layer] if layer.endswith(".py") else sorted((PACKAGE / layer).rglob("*.py"))
    assert paths and all(p.exists() for p in paths), layer
    for path in paths:
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


def test_every_module_has_its_layer() -> None:
    top = {p.name for p in PACKAGE.iterdir() if p.suffix == ".py" or p.is_dir()}
    assert top - {"__pycache__"} <= set(ALLOWED) | {f"{b}.py" for b in BASE} | {
        "__init__.py",
        "__main__.py",
        "facts",
    }


def test_the_library_never_prints_or_exits() -> None:
    """Only the command line writes to the terminal: the library reports progress through a callback
    (kvplan.progress) and returns what it found."""
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.parent.name == "cli" or path.name == "__main__.py":
            continue
        text = path.read_text()
        for name in ("print(", "sys.exit(", "sys.stdout", "sys.stderr", "open(", "isatty"):
            if name == "open(" and path.parent.name in ("sources",):
                continue  # the readers open the files they read
            # (a Rich console drawing into a string, console.print, is not printing)
            pattern = r"(?<![.\w])print\(" if name == "print(" else re.escape(name)
            assert not re.search(pattern, text), (path, name)


def test_no_module_imports_itself_back() -> None:
    """No import circle at run time (function-local imports included; a TYPE_CHECKING import is not one): the
    solvers read no file, so capacity's deployment ↔ runtime ↔ llamacpp circle cannot come back."""
    mods = {".".join(f.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__"): f
            for f in PACKAGE.rglob("*.py")}  # fmt: skip
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for m, f in mods.items():
        tree = ast.parse(f.read_text())
        typing_only = {id(n) for s in tree.body if isinstance(s, ast.If) and "TYPE_CHECKING" in ast.unparse(s.test)
                       for n in ast.walk(s)}  # fmt: skip
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kvplan"):
                if id(node) in typing_only:
                    continue
                named = [f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in mods]
                edges[m] |= {t for t in named or [node.module] if t in mods and t not in (m, "kvplan")}

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), list(edges[start])
        while todo:
            m = todo.pop()
            if m == goal:
                return True
            if m not in seen:
                seen.add(m)
                todo += edges[m]
        return False

    circles = sorted(f"{a} -> {b}" for a in mods for b in edges[a] if reaches(b, a))
    assert not circles, circles
