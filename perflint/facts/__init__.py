"""Fact sources: named tables of rows that rules run over (the `scope` of a rule).

A fact source is a Python function `(ctx) -> list[row dict]` registered here with the fields
that identify a row (its key, used for grouping and fingerprints). Capabilities say whether a
trace holds the data a rule needs; a rule whose requirement is missing is reported as skipped
with the capability's reason. Third parties add sources, fields and capabilities through the
`perflint.facts` entry-point group: a function called once, with no arguments, that registers them
with this module's decorators (`fact`, `run_source`, `enricher`, `capability`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from perflint.metrics.steps import analysis_steps
from perflint.model import Step, Trace
from perflint.plugins import entry_points

Row = dict[str, Any]


@dataclass
class Context:
    trace: Trace
    include_edge_steps: bool = False
    cache: dict[Hashable, Any] = field(default_factory=dict)  # keyed by a name, or ("rows", scope)

    @property
    def steps(self) -> list[Step]:
        got = self.cache.get("steps")
        if got is None:
            got = analysis_steps(self.trace, self.include_edge_steps)
            self.cache["steps"] = got
        return got


@dataclass(frozen=True)
class FactSource:
    name: str
    fn: Callable[[Context], list[Row]]
    key: tuple[str, ...]
    doc: str
    fields: dict[str, str]  # field -> description (for docs and rule validation)


SOURCES: dict[str, FactSource] = {}
CAPABILITIES: dict[str, Callable[[Trace], str | None]] = {}
CAPABILITY_DOCS: dict[str, str] = {}  # capability -> what it checks (the fact catalogue)
# Extra per-row fields contributed by other modules or plugins: scope -> [fn(ctx, row) -> dict]
ENRICHERS: dict[str, list[Callable[[Context, Row], Row]]] = {}
EXTRA_FIELDS: dict[str, dict[str, str]] = {}
FIELD_MODULE: dict[tuple[str, str], str] = {}  # (scope, enriched field) -> module that adds it
# Run-level sources see every trace's `rank_row` (the `trace` row): multi-rank rules such as
# stragglers. name -> (fn(list of rank rows) -> rows, key, fields)
RUN_SOURCES: dict[str, tuple[Callable[[list[Row]], list[Row]], tuple[str, ...], dict[str, str]]] = {}
# Why a run-level source gave no rows (its rules are then skipped with this reason).
RUN_EMPTY: dict[str, str] = {}


def fact(name: str, key: tuple[str, ...], fields: dict[str, str]) -> Callable[[Callable[[Context], list[Row]]], Callable[[Context], list[Row]]]:
    def deco(fn: Callable[[Context], list[Row]]) -> Callable[[Context], list[Row]]:
        SOURCES[name] = FactSource(name, fn, key, (fn.__doc__ or "").strip(), fields)
        return fn

    return deco


def capability(name: str, checks: str = "") -> Callable[[Callable[[Trace], str | None]], Callable[[Trace], str | None]]:
    """Registers `fn(trace) -> reason or None` as the capability `name`; `checks`: what it checks."""

    def deco(fn: Callable[[Trace], str | None]) -> Callable[[Trace], str | None]:
        CAPABILITIES[name] = fn
        CAPABILITY_DOCS[name] = checks
        return fn

    return deco


def enricher(scope: str, fields: dict[str, str]) -> Callable[[Callable[[Context, Row], Row]], Callable[[Context, Row], Row]]:
    def deco(fn: Callable[[Context, Row], Row]) -> Callable[[Context, Row], Row]:
        ENRICHERS.setdefault(scope, []).append(fn)
        EXTRA_FIELDS.setdefault(scope, {}).update(fields)
        FIELD_MODULE.update({(scope, f): fn.__module__ for f in fields})
        return fn

    return deco


def run_source(
    name: str, key: tuple[str, ...], fields: dict[str, str], empty: str = "needs at least two ranks (traces) in one run"
) -> Callable[[Callable[[list[Row]], list[Row]]], Callable[[list[Row]], list[Row]]]:
    def deco(fn: Callable[[list[Row]], list[Row]]) -> Callable[[list[Row]], list[Row]]:
        RUN_SOURCES[name] = (fn, key, fields)
        RUN_EMPTY[name] = empty
        return fn

    return deco


def fields_of(scope: str) -> dict[str, str]:
    """Every field rows of `scope` carry (source fields plus enrichers')."""
    if scope in SOURCES:
        base = SOURCES[scope].fields
    elif scope in RUN_SOURCES:
        base = RUN_SOURCES[scope][2]
    else:
        return {}
    return {**base, **EXTRA_FIELDS.get(scope, {})}


def rows(ctx: Context, scope: str) -> list[Row]:
    cached = ctx.cache.get(("rows", scope))
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    src = SOURCES[scope]
    out = src.fn(ctx)
    for enrich in ENRICHERS.get(scope, []):
        for r in out:
            r.update(enrich(ctx, r))
    ctx.cache[("rows", scope)] = out
    return out


def missing(trace: Trace, requirements: list[str], memo: dict[str, str | None] | None = None) -> str | None:
    """The reason the first unmet requirement gives, or None when all are met. `memo` keeps each
    capability's answer across the rules of one trace (several rules share a requirement)."""
    for req in requirements:
        check = CAPABILITIES.get(req)
        if check is None:
            return f"unknown capability '{req}'"
        if memo is None:
            reason = check(trace)
        elif req in memo:
            reason = memo[req]
        else:
            reason = memo[req] = check(trace)
        if reason:
            return reason
    return None


_loaded = False
_plugins: set[str] = set()


def load_plugins() -> list[str]:
    """Run every `perflint.facts` entry point not run yet; returns the names loaded now."""
    new = []
    for ep in entry_points(group="perflint.facts"):
        if ep.value in _plugins:
            continue
        _plugins.add(ep.value)
        ep.load()()
        new.append(ep.name)
    return new


def load_all() -> None:
    """Import the built-in fact modules and plugins (once)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    from perflint.facts import builtin  # noqa: F401  (registers built-in sources)

    load_plugins()
