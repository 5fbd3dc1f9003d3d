"""The CI integrations work when copied: the GitHub Action (its install and check steps run here
with stand-ins), the example workflow, the pre-commit hooks, and one repository placeholder."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT

PLACEHOLDER = "<owner>/perflint"  # docs/ci.md defines it: no public repository is named yet


def _load(rel: str) -> Any:
    return yaml.safe_load((ROOT / rel).read_text(encoding="utf-8"))


def _step(action: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in action["runs"]["steps"] if s.get("name") == name)


def test_action_inputs_are_described_and_version_defaults_to_the_actions_ref() -> None:
    action = _load("action.yml")
    assert all(spec.get("description") for spec in action["inputs"].values())
    assert action["inputs"]["version"]["default"] == "" and "action_ref" in action["inputs"]["version"]["description"]
    cache = _step(action, "Cache pip downloads")
    assert cache["uses"].startswith("actions/cache@") and "github.action_ref" in cache["with"]["key"]
    assert "--source-root" in _step(action, "Run perflint check")["run"]


def _fake_python(tmp_path: Path) -> Path:
    """A stand-in interpreter: `-m venv DIR` makes DIR/bin/python, which logs the pip call."""
    log = tmp_path / "pip.log"
    fake = tmp_path / "fakepython"
    fake.write_text(
        "#!/bin/bash\n"
        'if [ "$1 $2" = "-m venv" ]; then mkdir -p "$3/bin"\n'
        f'  printf \'#!/bin/bash\\necho "$@" >> {log}\\n\' > "$3/bin/python"\n'
        '  printf \'#!/bin/bash\\necho perflint 0\\n\' > "$3/bin/perflint"\n'
        '  chmod +x "$3/bin/python" "$3/bin/perflint"; fi\n'
    )
    fake.chmod(0o755)
    return fake


@pytest.mark.parametrize(
    ("version", "ref", "installs"),
    [("", "v1", "ACTION"), ("v1", "v1", "ACTION"), ("0.1.0", "v1", "perflint-gpu==0.1.0")],
)
def test_action_installs_its_own_ref_unless_a_version_is_given(tmp_path: Path, version: str, ref: str, installs: str) -> None:
    script = _step(_load("action.yml"), "Install perflint")["run"]
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "PERFLINT_VERSION": version,
        "PERFLINT_PYTHON": str(_fake_python(tmp_path)),
        "ACTION_PATH": str(tmp_path / "ACTION"),
        "ACTION_REF": ref,
        "VENV": str(tmp_path / "venv"),
    }
    subprocess.run(["bash", "-c", script], env=env, check=True, capture_output=True, text=True)
    line = (tmp_path / "pip.log").read_text().strip()
    assert line.startswith("-m pip install -q ") and line.endswith(installs if installs != "ACTION" else str(tmp_path / "ACTION"))


def test_action_check_step_gates_and_writes_reports(tmp_path: Path) -> None:
    from tests.cli.test_report_cli import bad_trace

    venv = Path(sys.prefix)
    if not (venv / "bin" / "perflint").exists():
        pytest.skip("the perflint console script is not installed in this environment")
    script = _step(_load("action.yml"), "Run perflint check")["run"]
    out, summary = tmp_path / "out.txt", tmp_path / "summary.md"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")},
        "VENV": str(venv),
        "GITHUB_OUTPUT": str(out),
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_WORKSPACE": str(tmp_path),
        "IN_PATHS": bad_trace(tmp_path),
        "IN_FAIL_ON": "error",
        "IN_SARIF": str(tmp_path / "perflint.sarif"),
        "IN_SUMMARY": "true",
        "IN_MAX_BYTES": "1048576",
        "IN_ARGS": "--select TC001 --jobs 1",
    }
    for name in ("BASELINE", "ACCEPTED", "CONFIG", "JSON", "JUNIT", "GITLAB", "MARKDOWN", "HTML"):
        env[f"IN_{name}"] = ""
    done = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert out.read_text() == "exit-code=1\n"
    assert "::error file=tc001_bad.json,title=perflint TC001" in done.stdout  # relative to the workspace
    assert "perflint: failed" in summary.read_text() and (tmp_path / "perflint.sarif").is_file()


def test_example_workflow_uploads_sarif_always_and_caches() -> None:
    wf = _load("examples/github/perflint.yml")
    steps = wf["jobs"]["perflint"]["steps"]
    (lint,) = [s for s in steps if str(s.get("uses", "")).startswith(PLACEHOLDER + "@")]
    (upload,) = [s for s in steps if str(s.get("uses", "")).startswith("github/codeql-action/upload-sarif@")]
    assert "always()" in upload["if"] and upload["with"]["sarif_file"] == lint["with"]["sarif"]
    assert wf["permissions"]["security-events"] == "write"
    assert _load("action.yml")["inputs"]["cache"]["default"] == "true"  # pip caching, on by default
    assert "examples/github/perflint.yml" in (ROOT / "docs" / "ci.md").read_text()


def test_one_repository_placeholder_everywhere() -> None:
    named = []
    for rel in ("README.md", "docs/ci.md", "examples/github/perflint.yml", "action.yml", ".pre-commit-hooks.yaml"):
        text = (ROOT / rel).read_text(encoding="utf-8")
        named += re.findall(r"(?:uses:|github\.com/)\s*([^\s@]*perflint)(?:@|\b)", text)
    assert named and set(named) == {PLACEHOLDER}


def test_pre_commit_hooks() -> None:
    hooks = {h["id"]: h for h in _load(".pre-commit-hooks.yaml")}
    lint = hooks["perflint"]
    assert lint["language"] == "python" and lint["entry"] == "perflint check"
    files = re.compile(lint["files"])
    for name in ("host_1234.1700000000000.pt.trace.json", "traces/worker0.1623143089861.pt.trace.json.gz",
                 "rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"):
        assert files.search(name), name
    for name in ("package.json", "rules/TC001.yaml", "trace.json.bak"):
        assert not files.search(name), name
    assert hooks["perflint-rules"]["entry"] == "perflint rules validate"
