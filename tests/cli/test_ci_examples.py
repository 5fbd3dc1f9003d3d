"""The CI set-ups work when copied: every install line installs something that exists (no bare
`pip install perflint-gpu` while no release is on PyPI, outside a note that says so), the YAML
in the docs parses, the example workflow has the permissions upload-sarif needs, the action's
`version:` and `paths:` inputs behave as documented, and Windows runners get a clear error."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT

DOCS = ("README.md", "docs/ci.md", "examples/pytest/README.md", "examples/github/perflint.yml", "action.yml")
GIT_INSTALL = "perflint-gpu @ git+https://github.com/<owner>/perflint@"
BARE = re.compile(r"^perflint-gpu(\[[^\]]*\])?(==\S*)?$")


def _paragraphs(text: str) -> list[str]:
    return re.split(r"\n\s*\n", text)


def _install_targets(command: str) -> list[str]:
    """What a `pip install ...` command line installs (options and their values left out)."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    out: list[str] = []
    for w in words[2:]:
        if w in ("&&", ";", "|") or w.startswith("#"):
            break
        if not w.startswith("-"):
            out.append(w)
    return out


def _pip_installs(text: str) -> list[tuple[str, str]]:
    """(install target, its paragraph) for every `pip install` in `text`."""
    found = []
    for para in _paragraphs(text):
        for m in re.finditer(r"pip install ([^\n`']*(?:'[^'\n]*'[^\n`']*)*)", para):
            for target in _install_targets("pip install " + m.group(1)):
                found.append((target, para))
    return found


@pytest.mark.parametrize("rel", DOCS)
def test_every_install_line_installs_something_that_exists(rel: str) -> None:
    installs = _pip_installs((ROOT / rel).read_text(encoding="utf-8"))
    for target, para in installs:
        if "perflint" not in target:
            continue  # torch, a requirement the line installs besides perflint
        if BARE.match(target):
            # PyPI has no release yet: a bare name only where the text says so, or that it works once there is one.
            note = para.lower()
            assert "release" in note and ("once" in note or "yet" in note), f"{rel}: {target!r} from PyPI without a note:\n{para}"
        else:
            local = target.endswith(".whl") or target.startswith((".", "/"))
            assert local or target.startswith(GIT_INSTALL), f"{rel}: {target!r} is neither the repository install nor a local path"


def test_the_docs_install_from_the_repository_in_each_ci_system() -> None:
    text = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    for system in ("## GitLab CI", "## Jenkins", "## Buildkite"):
        section = text.split(system, 1)[1].split("\n## ", 1)[0]
        targets = [t for t, _ in _pip_installs(section)]
        assert targets and all(t.startswith(GIT_INSTALL) for t in targets), (system, targets)
    pytest_readme = (ROOT / "examples" / "pytest" / "README.md").read_text(encoding="utf-8")
    assert {t for t, _ in _pip_installs(pytest_readme)} >= {".", GIT_INSTALL + "v1"}


def test_yaml_in_the_docs_parses() -> None:
    blocks = re.findall(r"```yaml\n(.*?)```", (ROOT / "docs" / "ci.md").read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 4
    for block in blocks:
        assert yaml.safe_load(textwrap.dedent(block))


def test_example_workflow_permissions() -> None:
    wf = yaml.safe_load((ROOT / "examples" / "github" / "perflint.yml").read_text(encoding="utf-8"))
    assert wf["permissions"] == {"contents": "read", "security-events": "write", "actions": "read"}
    docs = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    snippet = yaml.safe_load(re.search(r"```yaml\n(permissions:.*?)```", docs, re.S).group(1))  # type: ignore[union-attr]
    assert snippet["permissions"] == wf["permissions"]


def _action() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    return loaded


def _script(name: str) -> str:
    step: dict[str, Any] = next(s for s in _action()["runs"]["steps"] if s.get("name") == name)
    assert step["shell"] == "bash"
    script: str = step["run"]
    return script


def test_windows_runners_fail_first_with_a_message() -> None:
    first = _action()["runs"]["steps"][0]
    assert first["if"] == "runner.os == 'Windows'"
    done = subprocess.run(["bash", "-c", first["run"]], capture_output=True, text=True)
    assert done.returncode != 0 and done.stdout.startswith("::error ") and "Windows" in done.stdout


def _executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def _fake_python(tmp_path: Path, pip_ok: bool) -> Path:
    """`-m venv DIR` makes DIR/bin/python (which logs its pip call and succeeds or not) and DIR/bin/perflint."""
    stubs = tmp_path / "stubs"
    _executable(stubs / "python", f'#!/bin/bash\nprintf "%s\\n" "$*" >> "{tmp_path / "pip.log"}"\nexit {0 if pip_ok else 1}\n')
    _executable(stubs / "perflint", "#!/bin/bash\necho perflint 0\n")
    return _executable(
        tmp_path / "fakepython",
        f'#!/bin/bash\nif [ "$1 $2" = "-m venv" ]; then mkdir -p "$3/bin" && cp "{stubs}/python" "{stubs}/perflint" "$3/bin/"; fi\n',
    )


@pytest.mark.parametrize(
    ("version", "installs"),
    [
        ("", "ACTION"),
        ("perflint-gpu @ git+https://github.com/<owner>/perflint@0123abc", "perflint-gpu @ git+https://github.com/<owner>/perflint@0123abc"),
        ("dist/perflint_gpu-0.3.0-py3-none-any.whl", "dist/perflint_gpu-0.3.0-py3-none-any.whl"),
        ("0.3.0", "perflint-gpu==0.3.0"),
    ],
)
def test_action_version_input(tmp_path: Path, version: str, installs: str) -> None:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "PERFLINT_VERSION": version,
        "PERFLINT_PYTHON": str(_fake_python(tmp_path, pip_ok=True)),
        "ACTION_PATH": str(tmp_path / "action checkout"),
        "ACTION_REF": "",  # empty in composite actions on some runners
        "VENV": str(tmp_path / "venv"),
    }
    done = subprocess.run(["bash", "-c", _script("Install perflint")], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    expected = env["ACTION_PATH"] if installs == "ACTION" else installs
    assert (tmp_path / "pip.log").read_text().splitlines() == [f"-m pip install -q {expected}"]


def test_action_install_failure_is_one_clear_error(tmp_path: Path) -> None:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "PERFLINT_VERSION": "0.3.0",
        "PERFLINT_PYTHON": str(_fake_python(tmp_path, pip_ok=False)),
        "ACTION_PATH": str(tmp_path / "ACTION"),
        "ACTION_REF": "v1",
        "VENV": str(tmp_path / "venv"),
    }
    done = subprocess.run(["bash", "-c", _script("Install perflint")], env=env, capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stdout.count("::error ") == 1 and "perflint-gpu==0.3.0" in done.stdout and "PyPI" in done.stdout


def _run_check(tmp_path: Path, paths: str) -> tuple[subprocess.CompletedProcess[str], list[str] | None]:
    """Runs the action's check step with a stand-in perflint that records its arguments; returns
    the paths it was given (None when it did not run)."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True, exist_ok=True)
    argv = tmp_path / "argv"
    stub = venv / "bin" / "perflint"
    stub.write_text(f'#!/bin/bash\nprintf "%s\\0" "$@" > "{argv}"\n')
    stub.chmod(0o755)
    out = tmp_path / "github_output"
    env = {
        "PATH": os.environ["PATH"],
        "VENV": str(venv),
        "GITHUB_OUTPUT": str(out),
        "IN_PATHS": paths,
        "IN_FAIL_ON": "error",
        "IN_SUMMARY": "false",
        "IN_MAX_BYTES": "1048576",
    }
    for name in ("BASELINE", "ACCEPTED", "CONFIG", "JSON", "JUNIT", "SARIF", "GITLAB", "MARKDOWN", "HTML", "ARGS"):
        env[f"IN_{name}"] = ""
    work = tmp_path / "work"
    done = subprocess.run(["bash", "-c", _script("Run perflint check")], env=env, capture_output=True, text=True, cwd=work)
    if not argv.exists():
        return done, None
    args = argv.read_text().split("\0")[:-1]
    assert args[0] == "check"
    return done, args[1 : args.index("--fail-on")]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    w = tmp_path / "work"
    for rel in ("traces/run 1/r0.json", "traces/run 2/r1.json", "a.json", "b.json", "x y.json", "x", "p", "q", "p q"):
        (w / rel).parent.mkdir(parents=True, exist_ok=True)
        (w / rel).write_text("{}")
    return w


@pytest.mark.parametrize(
    ("paths", "expected"),
    [
        ("traces/run 1/\ntraces/run 2/r1.json\n", ["traces/run 1/", "traces/run 2/r1.json"]),  # one per line, spaces kept
        ("  traces/run 1\r\n\n\ta.json  \r\n", ["traces/run 1", "a.json"]),  # indented, CRLF, blank lines
        ("a.json b.json", ["a.json", "b.json"]),  # one line that names no path: split at whitespace
        ("a.json  b.json\ntraces/run 2", ["a.json", "b.json", "traces/run 2"]),
        ("traces/run 1", ["traces/run 1"]),  # one line that names a path: kept whole
        ("x y.json", ["x y.json"]),  # `y` does not exist: not ambiguous
        ("traces/", ["traces/"]),
    ],
)
def test_action_paths_one_per_line(tmp_path: Path, work: Path, paths: str, expected: list[str]) -> None:
    done, got = _run_check(tmp_path, paths)
    assert done.returncode == 0, done.stdout + done.stderr
    assert got == expected


def test_action_paths_ambiguous_line_fails_clearly(tmp_path: Path, work: Path) -> None:
    done, got = _run_check(tmp_path, "a.json\np q")  # `p q`, `p` and `q` all exist
    assert got is None and done.returncode == 2
    assert done.stdout.startswith("::error title=perflint: ambiguous paths::") and "one path per line" in done.stdout
    assert (tmp_path / "github_output").read_text() == "exit-code=2\n"
