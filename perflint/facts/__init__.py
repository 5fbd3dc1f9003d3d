"""Fact sources: named tables of rows that rules run over (the `scope` of a rule).

A fact source is a Python function `(ctx) -> list[row dict]` registered here with the fields
that identify a row (its key, used for grouping and fingerprints) and every field it gives, each
declared once beside the code that computes it (perflint.facts.fields: a meaning, typed by the
field's name, or `typed(meaning, type, unit=...)`). Capabilities say whether a trace holds the
data a rule needs; a rule whose requirement is missing is reported as skipped with the
capability's reason. All of it lands in one registry, `REGISTRY`. perflint's own modules register
when perflint.facts.builtin imports them (its `load_all` adds the plugins): this package knows
none of them, since they import it. Third parties add sources, fields and capabilities through
the `perflint.facts` entry-point group: a function called once, with no arguments, that registers
them with this module's decorators (`fact`, `run_source`, `enricher`, `capability`,
`context_capability`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from perflint.facts.fields import Fields, FieldSpec, FieldType, specs, typed
from perflint.memo import Memo
from perflint.metrics.steps import analysis_steps
from perflint.model import Step, Trace
from perflint.plugins import entry_points

Row = dict[str, Any]


class Baseline(Protocol):
    """The baseline one trace is checked against, as the `baseline` fact source reads it
    (perflint.baseline makes it)."""

    @property
    def steps(self) -> int:
        """The baseline's analysis steps."""
        ...

    def compare(self, ctx: Context) -> list[Row]:
        """Its comparison with the context's trace, metric by metric."""
        ...


@dataclass(frozen=True, eq=False)
class Context:
    """One trace as a check sees it: the trace, the run's options, the baseline it is compared
    with (None without --baseline), and what fact sources derive from them, computed once."""

    trace: Trace
    include_edge_steps: bool = False
    baseline: Baseline | None = None
    memo: Memo = field(default_factory=Memo, repr=False)

    @property
    def steps(self) -> list[Step]:
        return self.memo.get(_analysis_steps, self)


def _analysis_steps(ctx: Context) -> list[Step]:
    return analysis_steps(ctx.trace, ctx.include_edge_steps)


@dataclass(frozen=True)
class FactSource:
    name: str
    fn: Callable[[Context], list[Row]]
    key: tuple[str, ...]  # the fields that identify a row (grouping, fingerprints)
    doc: str
    fields: dict[str, FieldSpec]
    module: str  # where it is registered: perflint's own, or a plugin's


@dataclass(frozen=True)
class RunSource:
    """Rows over every trace's `trace` row of a run: multi-rank rules such as stragglers."""

    name: str
    fn: Callable[[list[Row]], list[Row]]
    key: tuple[str, ...]
    doc: str
    fields: dict[str, FieldSpec]
    empty: str  # why it gave no rows (its rules are then skipped with this reason)
    module: str


@dataclass(frozen=True)
class Enricher:
    """Fields another module or a plugin adds to each row of a scope."""

    scope: str
    fn: Callable[[Context, Row], Row]
    fields: dict[str, FieldSpec]
    module: str


@dataclass(frozen=True)
class Capability:
    name: str
    check: Callable[[Context], str | None]  # the reason the trace lacks it, or None
    checks: str  # what it checks (the fact catalogue)
    module: str


@dataclass
class Registry:
    """Every scope, field and capability a rule can use, as the decorators below registered them."""

    sources: dict[str, FactSource] = field(default_factory=dict)
    run_sources: dict[str, RunSource] = field(default_factory=dict)
    # scope -> its enrichers in registration order: the order of the rows' fields
    enrichers: dict[str, list[Enricher]] = field(default_factory=dict)
    capabilities: dict[str, Capability] = field(default_factory=dict)

    def scopes(self) -> list[str]:
        return [*self.sources, *self.run_sources]

    def fields_of(self, scope: str) -> dict[str, FieldSpec]:
        """Every field rows of `scope` carry (the source's fields, then its enrichers')."""
        src = self.sources.get(scope) or self.run_sources.get(scope)
        if src is None:
            return {}
        out = dict(src.fields)
        for e in self.enrichers.get(scope, []):
            out.update(e.fields)
        return out

    def declared_in(self, scope: str) -> dict[str, str]:
        """Field of `scope` -> the module that declares it (an enricher's over its source's)."""
        src = self.sources.get(scope) or self.run_sources.get(scope)
        out = dict.fromkeys(src.fields, src.module) if src else {}
        for e in self.enrichers.get(scope, []):
            out.update(dict.fromkeys(e.fields, e.module))
        return out


REGISTRY = Registry()


def is_builtin(module: str) -> bool:
    """Whether `module` is perflint's own (else a plugin's)."""
    return module.startswith("perflint.")


def _specs(fields: Fields, module: str) -> dict[str, FieldSpec]:
    return specs(fields, module, strict=is_builtin(module))


def fact(name: str, key: tuple[str, ...], fields: Fields) -> Callable[[Callable[[Context], list[Row]]], Callable[[Context], list[Row]]]:
    def deco(fn: Callable[[Context], list[Row]]) -> Callable[[Context], list[Row]]:
        REGISTRY.sources[name] = FactSource(name, fn, key, (fn.__doc__ or "").strip(), _specs(fields, fn.__module__), fn.__module__)
        return fn

    return deco


def capability(name: str, checks: str = "") -> Callable[[Callable[[Trace], str | None]], Callable[[Trace], str | None]]:
    """Registers `fn(trace) -> reason or None` as the capability `name`; `checks`: what it checks."""

    def deco(fn: Callable[[Trace], str | None]) -> Callable[[Trace], str | None]:
        def of_context(ctx: Context) -> str | None:
            return fn(ctx.trace)

        REGISTRY.capabilities[name] = Capability(name, of_context, checks, fn.__module__)
        return fn

    return deco


def context_capability(name: str, checks: str = "") -> Callable[[Callable[[Context], str | None]], Callable[[Context], str | None]]:
    """Registers `fn(ctx) -> reason or None` as the capability `name`: for what the context holds
    beside the trace (its baseline)."""

    def deco(fn: Callable[[Context], str | None]) -> Callable[[Context], str | None]:
        REGISTRY.capabilities[name] = Capability(name, fn, checks, fn.__module__)
        return fn

    return deco


def enricher(scope: str, fields: Fields) -> Callable[[Callable[[Context, Row], Row]], Callable[[Context, Row], Row]]:
    def deco(fn: Callable[[Context, Row], Row]) -> Callable[[Context, Row], Row]:
        added = Enricher(scope, fn, _specs(fields, fn.__module__), fn.__module__)
        REGISTRY.enrichers.setdefault(scope, []).append(added)
        return fn

    return deco


def run_source(
    name: str, key: tuple[str, ...], fields: Fields, empty: str = "needs at least two ranks (traces) in one run"
) -> Callable[[Callable[[list[Row]], list[Row]]], Callable[[list[Row]], list[Row]]]:
    def deco(fn: Callable[[list[Row]], list[Row]]) -> Callable[[list[Row]], list[Row]]:
        doc = (fn.__doc__ or "").strip()
        REGISTRY.run_sources[name] = RunSource(name, fn, key, doc, _specs(fields, fn.__module__), empty, fn.__module__)
        return fn

    return deco


def rows(ctx: Context, scope: str) -> list[Row]:
    """The rows of `scope` for the context's trace, enriched; made once per context."""
    return ctx.memo.keyed(_rows, ctx, scope)


def _rows(ctx: Context, scope: str) -> list[Row]:
    out = REGISTRY.sources[scope].fn(ctx)
    for e in REGISTRY.enrichers.get(scope, []):
        for r in out:
            r.update(e.fn(ctx, r))
    return out


def missing(ctx: Context, requirements: list[str], memo: dict[str, str | None] | None = None) -> str | None:
    """The reason the first unmet requirement gives, or None when all are met. `memo` keeps each
    capability's answer across the rules of one trace (several rules share a requirement)."""
    for req in requirements:
        cap = REGISTRY.capabilities.get(req)
        if cap is None:
            return f"unknown capability '{req}'"
        if memo is None:
            reason = cap.check(ctx)
        elif req in memo:
            reason = memo[req]
        else:
            reason = memo[req] = cap.check(ctx)
        if reason:
            return reason
    return None


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


__all__ = [
    "REGISTRY", "Baseline", "Capability", "Context", "Enricher", "FactSource", "FieldSpec", "FieldType", "Fields", "Registry", "Row", "RunSource",
    "capability", "context_capability", "enricher", "fact", "is_builtin", "load_plugins", "missing", "rows", "run_source", "typed",
]
