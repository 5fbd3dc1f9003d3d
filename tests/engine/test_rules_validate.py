from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from perflint.commands import rules_validate
from perflint.engine.loader import builtin_rules_dir
from perflint.engine.validate import validate_files

TC001 = str(builtin_rules_dir() / "TC001.yaml")


def test_builtin_rules_are_valid() -> None:
    files = sorted(str(p) for p in builtin_rules_dir().glob("*.yaml"))
    assert validate_files(files) == []


def test_bad_and_duplicate_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("code: TC001\nname: x\n")
    copy = tmp_path / "copy.yaml"
    copy.write_text(Path(TC001).read_text())
    errors = validate_files([str(bad), TC001, str(copy)])
    # Every problem of the bad file (one line each), then the duplicate code and the duplicate name.
    assert [e for e in errors if not e.startswith(str(bad))] == [
        f"{copy}: duplicate rule 'TC001' (also defined in {TC001})",
        f"{copy}: duplicate rule 'tensor-cores.half-precision-without-tensor-cores' (also defined in {TC001})",
    ]
    assert errors[0].startswith(str(bad)) and len(errors) > 3
    assert rules_validate.run(argparse.Namespace(files=[str(bad)])) == 2
    assert rules_validate.run(argparse.Namespace(files=[TC001])) == 0
    assert "error" in capsys.readouterr().err


def test_every_schema_problem_is_listed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("code: tc1\nname: x\nseverity: fatal\n")
    errors = validate_files([str(bad)])
    assert len(errors) >= 5 and all(re.match(f"{re.escape(str(bad))}: (line \\d: )?key '", e) for e in errors), errors
    assert not any("more)" in e for e in errors)
    said = {e.removeprefix(f"{bad}: ").split(": ")[-2] for e in errors}
    assert {"key 'code'", "key 'severity'", "key 'fix'"} <= said, said
    # A key in the file is named at its line; a missing one has no line.
    assert f"{bad}: line 3: key 'severity': " in "\n".join(errors) and f"{bad}: key 'fix': required" in errors
    assert rules_validate.run(argparse.Namespace(files=[str(bad)])) == 2
    assert capsys.readouterr().err.count("perflint: error: ") == len(errors)
