"""Imports follow the one-way data flow (DESIGN §2): a module knows only what is below it.

reader -> graph -> metrics -> facts -> baseline -> engine -> report; cli, commands, config, selection, pipeline on top.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

PKG = ROOT / "perflint"

LAYER = {
    "errors": 0,
    "units": 0,
    "memo": 0,
    "model": 0,
    "ids": 0,
    "plugins": 0,
    "readers": 1,
    "graph": 2,
    "metrics": 3,
    "stepmodel": 3.5,  # the analysis window, GPU use per step, the step graph and its replay
    "trace_summary": 3.7,  # one trace's headline numbers (perflint summary), read from the step model
    "facts": 4,
    "findings": 4,
    "baseline": 5,  # snapshots and comparisons of what metrics and facts derive
    "tables": 5,
    "op_view": 5,
    "engine": 6,
    "report": 7,
    "pipeline": 8,
    "config": 8,
    "selection": 8,
    "commands": 9,
    "api": 9,
    "cli": 9,
    "pytest_plugin": 10,
    "__main__": 10,
    "__init__": 10,  # the package's face: re-exports the API, imported on first use (tests/cli/test_api.py)
}


def _layer(module: str) -> float:
    parts = module.split(".")
    assert parts[0] == "perflint", module
    key = parts[1] if len(parts) > 1 else "__init__"
    return LAYER[key]


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("perflint"):
            out.append(node.module)
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names if a.name.startswith("perflint")]
    return out


def test_every_package_has_a_layer() -> None:
    tops = {p.stem if p.is_file() else p.name for p in PKG.iterdir() if not p.name.startswith((".", "_")) or p.name in ("__init__.py", "__main__.py")}
    tops -= {"builtin_rules", "py"}
    assert tops <= set(LAYER), tops - set(LAYER)


def test_imports_only_go_down() -> None:
    bad = []
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG.parent).with_suffix("")
        mod = ".".join(rel.parts)
        if mod.endswith(".__init__"):
            mod = mod[: -len(".__init__")]
        mine = _layer(mod)
        for imp in _imports(path):
            if imp == "perflint":
                continue
            if _layer(imp) > mine:
                bad.append(f"{mod} (layer {mine}) imports {imp} (layer {_layer(imp)})")
    assert not bad, "\n".join(bad)
