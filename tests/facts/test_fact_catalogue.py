"""The fact catalogue (`perflint rules facts`, docs/facts.md): every scope and field with a type
that real rows have, every capability described, every fact module in the explicit list."""

from __future__ import annotations

import ast
import pkgutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import perflint.facts as facts_pkg
from perflint.cli import main
from perflint.engine.docs import facts_markdown
from perflint.facts import FIELD_MODULE, SOURCES, Context, load_all, rows
from perflint.facts.builtin import MODULES
from perflint.facts.catalogue import capabilities, scopes
from perflint.graph.load import load_traces
from tests.conftest import FIXTURES, ROOT

ALLOWED = {
    "number": (int, float),
    "integer": (int,),
    "bool": (bool,),
    "text": (str,),
    "list": (list, tuple),
    "object": (dict,),
}


def test_docs_facts_md_is_generated_from_the_catalogue() -> None:
    assert (ROOT / "docs" / "facts.md").read_text() == facts_markdown(), "regenerate: perflint rules facts --format markdown > docs/facts.md"


def test_cli_prints_every_scope_and_capability(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "facts"]) == 0
    out = capsys.readouterr().out
    for sc in scopes():
        assert out.count(f"\n{sc.name}") + out.startswith(sc.name) >= 1
    assert all(name in out for name in capabilities())
    assert all(capabilities().values()), "every capability says what it checks"


def test_every_registering_module_is_in_the_explicit_list() -> None:
    registering = set()
    for mod in pkgutil.iter_modules(facts_pkg.__path__):
        tree = ast.parse((Path(facts_pkg.__path__[0]) / f"{mod.name}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("fact", "run_source", "enricher", "capability"):
                registering.add(mod.name)
    assert registering == set(MODULES)


def _traces() -> list[Any]:
    paths = [*sorted((FIXTURES / "gpu").glob("*.json.gz")), *sorted((FIXTURES / "cpu").glob("*.json.gz"))]
    paths += [*sorted((FIXTURES / "nsys").glob("*.sqlite")), FIXTURES / "mindspore" / "gpu" / "two_rank"]
    return [t for p in paths for t in load_traces(str(p))]


def test_every_field_has_the_type_the_catalogue_says() -> None:
    load_all()
    declared = {(sc.name, f.name): f.type for sc in scopes(builtin_only=True) if not sc.run_level for f in sc.fields}
    checked = 0
    for trace in _traces():
        ctx = Context(trace)
        for scope in SOURCES:
            for row in rows(ctx, scope):
                for name, value in row.items():
                    if name.startswith("_"):  # the work a finding's fix changes, for the step model
                        assert isinstance(value, (np.ndarray, tuple)), f"{scope}.{name}: {type(value).__name__}"
                        continue
                    want = declared.get((scope, name))
                    if want is None and not FIELD_MODULE.get((scope, name), "perflint.").startswith("perflint."):
                        continue  # a plugin's field (another test registered one)
                    assert want is not None, f"{scope}.{name} is not in the catalogue"
                    if value is None:
                        continue
                    ok = isinstance(value, ALLOWED[want]) and not (want in ("number", "integer") and isinstance(value, bool))
                    assert ok, f"{scope}.{name}: catalogue says {want}, a row has {type(value).__name__} {value!r}"
                    checked += 1
    assert checked > 1000
