"""The README cannot drift: every `$ kvplan …` example shows what kvplan prints (piped, so never cut), the command
reference is `--help` itself, every command is documented, and .ci/run runs exactly the README's test command.
``KVPLAN_UPDATE_DOCS=1`` rewrites the README's generated parts."""

from __future__ import annotations

import os
import re
import shlex

import pytest
from helpers import ROOT, kv

from kvplan.cli.commands import COMMANDS

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


def _regenerate(text: str) -> str:
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
    from kvplan.check.deployments import load_deployments
    from kvplan.sources.spec import load_spec_text

    blocks = re.findall(r"```yaml\n(.*?)```", readme, re.S)
    deployments = next(b for b in blocks if b.startswith("deployments:"))
    path = tmp_path / "d.yaml"
    path.write_text(deployments)
    assert [d.name for d in load_deployments(str(path))] == ["chat-8b-llamacpp"]
    spec = next(b for b in blocks if b.startswith("name: my-gqa-swa-model"))
    assert load_spec_text(spec, "spec.yaml").arch == "gemma3"
