"""The fact catalogue (`perflint rules facts`, docs/facts.md): every scope and field with a type
that real rows have and the same type wherever it is declared, every capability described, every
fact module imported by perflint.facts.builtin."""

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
from perflint.facts import REGISTRY, Context, FieldSpec, is_builtin, rows
from perflint.facts.builtin import load_all
from perflint.facts.catalogue import capabilities, scopes
from perflint.graph.load import load_traces
from tests.conftest import FIXTURES, ROOT
from tests.tools.test_layering import import_graph

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


def test_every_registering_module_is_imported_by_builtin_in_order() -> None:
    """builtin.py's imports are the list: the layering test sees them, and their order (alphabetical)
    is the order enrichers run in."""
    registering = set()
    for mod in pkgutil.iter_modules(facts_pkg.__path__):
        tree = ast.parse((Path(facts_pkg.__path__[0]) / f"{mod.name}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                if node.func.id in ("fact", "run_source", "enricher", "capability", "context_capability"):
                    registering.add(f"perflint.facts.{mod.name}")
    assert registering, "the walk finds the decorators"
    assert import_graph()["perflint.facts.builtin"] - {"perflint.facts"} == registering
    builtin = ast.parse((Path(facts_pkg.__path__[0]) / "builtin.py").read_text())
    listed = [a.name for node in builtin.body if isinstance(node, ast.ImportFrom) and node.module == "perflint.facts" for a in node.names]
    assert listed == sorted(listed) and len(listed) == len(registering)


def _declarations() -> dict[str, dict[str, list[FieldSpec]]]:
    """Field -> module -> each built-in declaration of it."""
    load_all()
    decls = [(s.module, s.fields) for s in [*REGISTRY.sources.values(), *REGISTRY.run_sources.values()]]
    decls += [(e.module, e.fields) for es in REGISTRY.enrichers.values() for e in es]
    out: dict[str, dict[str, list[FieldSpec]]] = {}
    for module, fields in decls:
        if is_builtin(module):
            for name, spec in fields.items():
                out.setdefault(name, {}).setdefault(module, []).append(spec)
    return out


def test_a_field_declared_in_several_places_has_one_type_and_unit() -> None:
    decls = _declarations()
    assert any(len(by_module) > 1 for by_module in decls.values()), "some fields are declared in several modules"
    bad = {
        name: {m: sorted({(s.type, s.unit) for s in specs}) for m, specs in by_module.items()}
        for name, by_module in decls.items()
        if len({(s.type, s.unit) for specs in by_module.values() for s in specs}) > 1
    }
    assert not bad, bad


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
        for scope in REGISTRY.sources:
            for row in rows(ctx, scope):
                for name, value in row.items():
                    if name.startswith("_"):  # the work a finding's fix changes, for the step model
                        assert isinstance(value, (np.ndarray, tuple)), f"{scope}.{name}: {type(value).__name__}"
                        continue
                    want = declared.get((scope, name))
                    if want is None and not is_builtin(REGISTRY.declared_in(scope).get(name, "perflint.")):
                        continue  # a plugin's field (another test registered one)
                    assert want is not None, f"{scope}.{name} is not in the catalogue"
                    if value is None:
                        continue
                    ok = isinstance(value, ALLOWED[want]) and not (want in ("number", "integer") and isinstance(value, bool))
                    assert ok, f"{scope}.{name}: catalogue says {want}, a row has {type(value).__name__} {value!r}"
                    checked += 1
    assert checked > 1000
