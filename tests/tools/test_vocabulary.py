"""The severities and the gate's floors are named once, in perflint/findings.py: no other module
lists them (a tuple, list, set or Literal of two or more), so that their order cannot differ."""

from __future__ import annotations

import ast

from tests.conftest import ROOT

NAMES = {"error", "warning", "info", "never"}
HOME = ROOT / "perflint" / "findings.py"


def lists_of_names(source: str) -> list[int]:
    """Lines where a tuple, list or set (a Literal's arguments too) holds two or more of NAMES."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            named = [e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in NAMES]
            if len(named) >= 2:
                out.append(node.lineno)
    return out


def test_only_findings_lists_the_severities() -> None:
    found = {
        str(p.relative_to(ROOT)): lines
        for p in sorted((ROOT / "perflint").rglob("*.py"))
        if p != HOME and (lines := lists_of_names(p.read_text()))
    }
    assert found == {}
    assert lists_of_names(HOME.read_text())  # where they are declared


def test_the_check_sees_tuples_and_literals() -> None:
    assert lists_of_names('X = ("error", "warning")\nY = Literal["info", "never"]\nZ = {"error": "critical", "warning": "major"}\n') == [1, 2]
