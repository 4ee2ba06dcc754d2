"""The README cannot drift: every `$ kvplan …` example shows what kvplan prints (piped, so never cut), the command
reference is `--help` itself, every command is documented, and .ci/run runs exactly the README's test command.
``KVPLAN_UPDATE_DOCS=1`` rewrites the README's generated parts."""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

import pytest
from helpers import ROOT, kv

from kvplan.options.commands import COMMANDS

README = ROOT / "README.md"
EXAMPLE = re.compile(r"```console\n(.*?)```", re.S)
HELP = re.compile(r"<!-- help: (kvplan[^>]*?) -->\n```text\n(.*?)```", re.S)


def _run(line: str) -> tuple[str, int]:
    """The output of one `$ kvplan …` line (its expected exit code after `# exit N`)."""
    command, _, comment = line.partition("  # exit ")
    args = shlex.split(command)
    assert args[0] == "kvplan", line
    r = kv(*args[1:])
    return r.stdout, int(comment) if comment else 0


def _example(block: str) -> str:
    out = []
    for line in block.splitlines():
        if line.startswith("$ "):
            stdout, _ = _run(line[2:])
            out += [line, stdout.rstrip("\n")]
    return "\n".join(out) + "\n"


ENGINE_CASES = re.compile(r"<!-- engine-cases -->\n.*?<!-- /engine-cases -->\n", re.S)


def _engine_cases() -> str:
    """The table of recorded engine cases, per model: how many, on which GPUs, how many refusals."""
    import json

    rows: dict[str, dict[str, list[dict[str, object]]]] = {}
    for engine in ("vllm", "sglang"):
        fixture = ROOT / "tests" / "fixtures" / "engines" / f"{engine}.json"
        for c in json.loads(fixture.read_text())["cases"] if fixture.exists() else []:
            rows.setdefault(c["case"]["model"], {}).setdefault(engine, []).append(c)

    def cell(cases: list[dict[str, object]]) -> str:
        if not cases:
            return "—"
        refused = sum(1 for c in cases if "error" in c)
        gpus = len({c["case"]["gpu"]["preset"] for c in cases})  # type: ignore[index]
        where = f"{gpus} GPU" + ("s" if gpus > 1 else "")
        return f"{len(cases)} ({where}" + (f", {refused} refused)" if refused else ")")

    lines = ["| model | vLLM 0.33.0 cases | SGLang 0.5.23 cases |", "|---|---:|---:|"]
    for name in sorted(rows):
        lines.append(f"| {name} | {cell(rows[name].get('vllm', []))} | {cell(rows[name].get('sglang', []))} |")
    total = {e: sum(len(r.get(e, [])) for r in rows.values()) for e in ("vllm", "sglang")}
    lines.append(f"| **all** | **{total['vllm']}** | **{total['sglang']}** |")
    return "<!-- engine-cases -->\n" + "\n".join(lines) + "\n<!-- /engine-cases -->\n"


ARCH_TABLE = re.compile(r"<!-- arch-table -->\n.*?<!-- /arch-table -->\n", re.S)


def _arch_table() -> str:
    """Every llama.cpp architecture: the Hugging Face architectures its converter maps to it, and whether kvplan
    reads it from a GGUF, from a config.json (proven: the converter's own output on a recorded config), and
    plans it for vLLM / SGLang (run on that config: ✓, ✗ where kvplan refuses as the engine does, — where the
    engine has no model class)."""
    import json
    import tempfile
    from pathlib import Path

    from kvplan.errors import KvplanError
    from kvplan.facts.archs import KNOWN_ARCHS
    from kvplan.facts.engine_archs import SGLANG_ARCHS, VLLM_ARCHS
    from kvplan.facts.hf_archs import HF_ARCHS
    from kvplan.model import ModelDescription
    from kvplan.runtimes.engines import SGLANG, VLLM, Engine, EngineSettings
    from kvplan.runtimes.engines.layout import layout
    from kvplan.sources.hf_config import load_hf_config

    cases = json.loads((ROOT / "tests" / "fixtures" / "hf_conversion.json").read_text())
    proven: dict[str, list[tuple[int, str, ModelDescription]]] = {}  # GGUF arch → (rank, HF arch, model)
    with tempfile.TemporaryDirectory() as tmp:
        for name, case in sorted(cases.items()):
            if "gguf_kv" not in case:
                continue
            (Path(tmp) / "config.json").write_text(json.dumps(case["config"]))
            try:
                model = load_hf_config(tmp)
            except KvplanError:  # the converter's GGUF is refused too (test_hf_conversion checks that)
                continue
            rank = ("real-", "extra-", "defaults-", "small-", "synth-").index(name[: name.index("-") + 1])
            proven.setdefault(case["gguf_kv"]["general.architecture"], []).append((rank, model.hf_architecture, model))
    by_arch: dict[str, list[str]] = {}
    for hf, entry in HF_ARCHS.items():
        if "gguf_arch" in entry:
            by_arch.setdefault(entry["gguf_arch"], []).append(hf)

    def engine_cell(engine: Engine, registry: frozenset[str], hfs: list[str], arch: str) -> str:
        runs = sorted(((r, h, m) for r, h, m in proven.get(arch, []) if h in registry), key=lambda t: (t[0], t[1]))
        if not runs:
            return "class" if any(h in registry for h in hfs) else "—"
        model = runs[0][2]
        try:
            layout(model, engine, engine.resolve(EngineSettings(), 80 * 10**9, "NVIDIA H100 80GB HBM3"))
        except KvplanError:
            return "✗"
        return "✓"

    lines = [
        "| llama.cpp | Hugging Face architectures | GGUF | config.json | vLLM 0.33 | SGLang 0.5.23 |",
        "|---|---|:-:|:-:|:-:|:-:|",
    ]
    for arch in sorted(KNOWN_ARCHS | set(by_arch)):
        hfs = sorted(by_arch.get(arch, []))
        shown = ", ".join(hfs[:3]) + (f" +{len(hfs) - 3}" if len(hfs) > 3 else "") if hfs else "—"
        config = "✓" if proven.get(arch) else ("unproven" if hfs else "—")
        gguf = "✓" if arch in KNOWN_ARCHS else "—"
        vllm, sglang = engine_cell(VLLM, VLLM_ARCHS, hfs, arch), engine_cell(SGLANG, SGLANG_ARCHS, hfs, arch)
        lines.append(f"| {arch} | {shown} | {gguf} | {config} | {vllm} | {sglang} |")
    return "<!-- arch-table -->\n" + "\n".join(lines) + "\n<!-- /arch-table -->\n"


def _regenerate(text: str) -> str:
    text = ARCH_TABLE.sub(lambda m: _arch_table(), text)
    text = ENGINE_CASES.sub(lambda m: _engine_cases(), text)
    text = EXAMPLE.sub(lambda m: f"```console\n{_example(m.group(1))}```", text)
    return HELP.sub(lambda m: f"<!-- help: {m.group(1)} -->\n```text\n{_help(m.group(1))}```", text)


def _help(command: str) -> str:
    r = kv(*shlex.split(command)[1:])
    assert r.exit_code == 0, r.output
    return r.stdout


@pytest.fixture(scope="module")
def readme() -> str:
    return README.read_text()


def test_examples_and_help_are_what_kvplan_prints(readme: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    fresh = _regenerate(readme)
    if os.environ.get("KVPLAN_UPDATE_DOCS"):
        README.write_text(fresh)
    assert fresh == readme, "the README differs from what kvplan prints; rerun with KVPLAN_UPDATE_DOCS=1"


def test_examples_exit_as_documented(readme: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    lines = [line[2:] for block in EXAMPLE.findall(readme) for line in block.splitlines() if line.startswith("$ ")]
    assert len(lines) >= 8
    for line in lines:
        command, _, comment = line.partition("  # exit ")
        assert kv(*shlex.split(command)[1:]).exit_code == (int(comment) if comment else 0), line


def test_every_command_has_its_help_in_the_readme(readme: str) -> None:
    documented = {m.group(1) for m in HELP.finditer(readme)}
    assert documented == {"kvplan --help"} | {f"kvplan {name} --help" for name in COMMANDS}
    for name in COMMANDS:
        assert f"`kvplan {name}" in readme.split("## Command reference")[0], name


def test_ci_runs_the_readme_test_command(readme: str) -> None:
    blocks = re.findall(r"```sh\n(.*?)\n```", readme, re.S)
    setup, test = blocks[0], blocks[1]
    assert setup.startswith("python3 -m venv .venv && . .venv/bin/activate && pip install . && kvplan ")
    assert test.startswith("python3 -m venv .venv && . .venv/bin/activate && pip install '.[test]'")
    ci = (ROOT / ".ci" / "run").read_text()
    assert test in ci.splitlines()


def test_yaml_examples_load(readme: str, tmp_path) -> None:
    """The deployments file and the model spec shown in the README are valid files."""
    from kvplan.checks.deployments import load_deployments
    from kvplan.sources.spec import load_spec_text

    blocks = re.findall(r"```yaml\n(.*?)```", readme, re.S)
    deployments = next(b for b in blocks if b.startswith("deployments:"))
    path = tmp_path / "d.yaml"
    path.write_text(deployments)
    assert [d.name for d in load_deployments(str(path))] == ["chat-8b-llamacpp"]
    spec = next(b for b in blocks if b.startswith("name: my-gqa-swa-model"))
    assert load_spec_text(spec, "spec.yaml").arch == "gemma3"


def test_conversion_proof_counts_are_the_recorded_ones(readme: str) -> None:
    cases = json.loads((ROOT / "tests/fixtures/hf_conversion.json").read_text())
    converted = sum("gguf_kv" in c for c in cases.values())
    text = " ".join(readme.split())
    assert f"no tensors) on {len(cases)} configs" in text
    assert f"the {converted} the converter converts" in text
    assert f"The other {len(cases) - converted} the converter refuses" in text


def test_the_library_examples_run(readme: str) -> None:
    import doctest

    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    examples = [b for b in blocks if ">>>" in b]
    assert examples
    parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for i, block in enumerate(examples):
        runner.run(parser.get_doctest(block, {}, f"README[{i}]", "README.md", 0))
    assert runner.summarize(verbose=False).failed == 0


def test_the_layout_names_every_part_of_the_package(readme: str) -> None:
    block = readme.split("## Layout", 1)[1].split("```", 2)[1]
    named = {line.split()[0] for line in block.splitlines() if line.startswith("  ") and not line.startswith("   ")}
    parts = {p.name + ("/" if p.is_dir() else "") for p in (ROOT / "kvplan").iterdir() if p.name != "__pycache__"}
    parts -= {"__init__.py", "__main__.py", "py.typed"}
    assert parts == named


def test_the_budgets_are_defined_once(readme: str) -> None:
    """The README's budget table says of each capacity budget what its --help line says (the settings table)."""
    from kvplan.options.settings import SETTINGS_BY_DEST

    rows = dict(re.findall(r"^\| `(\w+)` \| (.*) \|$", readme, re.M))
    for dest in ("max_kv", "max_total", "min_ctx", "min_parallel"):
        assert rows[dest] == SETTINGS_BY_DEST[dest].help, dest


def test_the_ci_example_installs_kvplan_from_its_repository(tmp_path: Path) -> None:
    """examples/github/kvplan-check.yml: kvplan comes from a checkout of its repository (it is not on the package
    index), and the check it runs is a command kvplan takes, with the outputs the next step reads."""
    import yaml
    from helpers import EXAMPLES

    flow = yaml.safe_load((EXAMPLES / "github" / "kvplan-check.yml").read_text())
    steps = flow["jobs"]["sizing"]["steps"]
    checkout = next(s for s in steps if s.get("name") == "Check out kvplan")
    assert checkout["uses"].startswith("actions/checkout@") and checkout["with"]["path"] == ".kvplan-src"
    runs = [s["run"] for s in steps if "run" in s]
    assert "pip install ./.kvplan-src" in runs and not any(r.strip() == "pip install kvplan" for r in runs)
    check = next(r for r in runs if r.startswith("kvplan check"))
    argv = shlex.split(check.split(">")[0])[1:]
    argv[argv.index("deployments.yaml")] = str(EXAMPLES / "deployments.yaml")
    argv[argv.index("kvplan-junit.xml")] = str(tmp_path / "junit.xml")
    r = kv(*argv)
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("**kvplan check") and (tmp_path / "junit.xml").read_text().startswith("<?xml")
