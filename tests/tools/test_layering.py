"""Imports follow the one-way data flow: a module knows only what is below it, and nothing imports
in a circle.

reader -> graph -> metrics -> facts -> baseline -> engine -> report; config, selection, pipeline,
then the run services, then cli, commands and the API on top; the package face last.

Every import counts: at module level, inside a function (imported on first use) or under
TYPE_CHECKING, and `from perflint import X` names the package face unless X is a module.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

from tests.conftest import ROOT

PKG = ROOT / "perflint"
FACE = "perflint"  # perflint/__init__.py: re-exports the API

LAYER = {
    "errors": 0,
    "units": 0,
    "kernelnames": 0,  # kernel names: demangled, read by structure, classified by each library's convention
    "yaml_lines": 0,  # where a key is in a YAML file, for config and rule errors
    "memo": 0,
    "model": 0,
    "ids": 0,
    "plugins": 0,
    "_version": 0,
    "readers": 1,
    "graph": 2,
    "metrics": 3,
    "stepmodel": 3.5,  # the analysis window, GPU use per step, the step graph and its replay
    "trace_summary": 3.7,  # one trace's headline numbers (perflint summary), read from the step model
    "facts": 4,
    "findings": 4,
    "baseline": 5,  # snapshots and comparisons of what metrics and facts derive
    "listings": 5,  # the kernel and op tables perflint kernels / ops and the API list
    "module_ranges": 4.5,  # the nn.Module range around each op
    "op_view": 5,
    "panels": 5.5,  # what the HTML report draws of a trace, gathered where the trace is
    "engine": 6,
    "report": 7,
    "pipeline": 8,
    "config": 8,
    "selection": 8,
    "options": 8,  # what a check run takes, declared once
    "run": 9,  # the check, summary and snapshot runs the CLI and the API share
    "commands": 10,
    "api": 10,
    "cli": 10,
    "pytest_plugin": 11,
    "__main__": 11,
    "__init__": 11,  # the package's face: re-exports the API, imported on first use (tests/cli/test_api.py)
}

# Circles left to remove, each listed so that no other can appear unnoticed: none now.
TOLERATED_CIRCLES: list[set[str]] = []


def _module_name(path: Path, root: Path) -> str:
    rel = path.relative_to(root).with_suffix("")
    mod = ".".join(rel.parts)
    return mod[: -len(".__init__")] if mod.endswith(".__init__") else mod


def _modules(pkg: Path = PKG) -> dict[str, Path]:
    return {_module_name(p, pkg.parent): p for p in pkg.rglob("*.py")}


def imports_of(source: str, known: Iterable[str]) -> list[str]:
    """The perflint modules `source` imports, anywhere in it. `from a import b` is module a.b
    when that is a module, else module a (a name defined in a's __init__)."""
    mods = set(known)
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.split(".")[0] == FACE:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                out.append(sub if sub in mods else node.module)
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names if a.name.split(".")[0] == FACE]
    return out


def import_graph(pkg: Path = PKG) -> dict[str, set[str]]:
    """Module -> the perflint modules it imports."""
    mods = _modules(pkg)
    return {m: {i for i in imports_of(p.read_text(), mods) if i != m} for m, p in mods.items()}


def _part(module: str) -> str:
    parts = module.split(".")
    assert parts[0] == FACE, module
    return parts[1] if len(parts) > 1 else "__init__"


def _layer(module: str) -> float:
    return LAYER[_part(module)]


def circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one node (Tarjan's, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[set[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            nxt = next(edges, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = set()
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    comp.add(m)
                    if m == node:
                        break
                if len(comp) > 1:
                    out.append(comp)
    return out


def test_every_package_has_a_layer() -> None:
    tops = {p.stem if p.is_file() else p.name for p in PKG.iterdir() if not p.name.startswith((".", "_")) or p.name in ("__init__.py", "__main__.py", "_version.py")}
    tops -= {"builtin_rules", "py", "data"}  # data files (rules, py.typed, the device table), not modules
    assert tops <= set(LAYER), tops - set(LAYER)


def test_imports_only_go_down() -> None:
    """Below the top, nothing imports the package face: it re-exports the API, which imports the rest."""
    bad = []
    for mod, imported in sorted(import_graph().items()):
        mine = _layer(mod)
        for imp in sorted(imported):
            if _layer(imp) > mine:
                bad.append(f"{mod} (layer {mine}) imports {imp} (layer {_layer(imp)})")
    assert not bad, "\n".join(bad)


def test_no_module_imports_in_a_circle() -> None:
    found = circles(import_graph())
    unexpected = [sorted(c) for c in found if c not in TOLERATED_CIRCLES]
    assert not unexpected, "\n".join("a circle: " + ", ".join(c) for c in unexpected)
    gone = [sorted(c) for c in TOLERATED_CIRCLES if c not in found]
    assert not gone, f"no longer a circle, delete it from TOLERATED_CIRCLES: {gone}"


def test_no_top_level_parts_import_in_a_circle() -> None:
    parts: dict[str, set[str]] = {}
    for mod, imported in import_graph().items():
        parts.setdefault(_part(mod), set()).update(_part(i) for i in imported if _part(i) != _part(mod))
    assert [sorted(c) for c in circles(parts)] == []


def test_the_checks_see_lazy_imports_and_the_package_face() -> None:
    known = {"perflint", "perflint.api", "perflint.facts", "perflint.facts.steps"}
    source = (
        "from perflint import __version__, facts\n"
        "def f():\n"
        "    from perflint.api import check\n"
        "    import perflint.facts.steps\n"
        "    from perflint.facts import Context\n"
    )
    assert imports_of(source, known) == ["perflint", "perflint.facts", "perflint.api", "perflint.facts.steps", "perflint.facts"]
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    assert circles(graph) == [{"a", "b", "c"}]
