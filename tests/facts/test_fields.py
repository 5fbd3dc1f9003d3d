"""A field's declaration: its name's suffix says its type and unit, `typed` says them where it has
none; perflint's own modules may not leave a type to a guess, a plugin's unsuffixed field is text."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

import perflint.facts as facts_pkg
from perflint.facts import Context, FieldSpec, Registry, Row, enricher, fact, run_source, typed
from perflint.facts.fields import by_name
from tests.conftest import ROOT


def test_a_name_says_its_type_and_unit() -> None:
    assert by_name("step_us") == ("number", "µs")
    assert by_name("gaps_ms") == ("number", "ms")
    assert by_name("busy_pct") == ("number", "%")
    assert by_name("peak_bytes") == ("integer", "bytes")
    assert by_name("total_gib") == ("number", "GiB")
    assert by_name("launch_to_gpu_ratio") == ("number", "")
    assert by_name("has_stacks") == by_name("is_fused") == ("bool", "")
    assert by_name("count") is None and by_name("usage") is None


def test_typed_takes_only_the_catalogue_types() -> None:
    assert typed("achieved bandwidth", "number", unit="GB/s") == FieldSpec("number", "GB/s", "achieved bandwidth")
    with pytest.raises(ValueError, match="'integr' is not one of number, integer, bool, text, list, object"):
        typed("launches", "integr")  # type: ignore[arg-type]


def _source(ctx: Context) -> list[Row]:
    return []


def _run(rank_rows: list[Row]) -> list[Row]:
    return []


def _enrich(ctx: Context, row: Row) -> Row:
    return {}


def _register(registry: Registry, kind: str, module: str, fields: dict[str, Any]) -> dict[str, FieldSpec]:
    """Registers a function of `module` with `fields` by the decorator `kind`; the fields as registered."""
    fn: Callable[..., Any] = {"fact": _source, "run_source": _run, "enricher": _enrich}[kind]

    def copy(*args: Any) -> Any:
        return fn(*args)

    copy.__module__ = module
    if kind == "fact":
        fact("widgets", key=("op",), fields=fields)(copy)
        return registry.sources["widgets"].fields
    if kind == "run_source":
        run_source("widgets", key=("op",), fields=fields)(copy)
        return registry.run_sources["widgets"].fields
    enricher("trace", fields=fields)(copy)
    return registry.enrichers["trace"][-1].fields


@pytest.mark.parametrize("kind", ["fact", "run_source", "enricher"])
def test_perflint_refuses_a_field_whose_type_is_a_guess(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    registry = Registry()
    monkeypatch.setattr(facts_pkg, "REGISTRY", registry)
    with pytest.raises(TypeError, match="perflint.facts.example: field 'widgets' has no unit suffix"):
        _register(registry, kind, "perflint.facts.example", {"op": typed("the op", "text"), "widgets": "how many"})
    assert registry.scopes() == [] and registry.enrichers == {}
    got = _register(registry, kind, "perflint.facts.example", {"widgets": typed("how many", "integer"), "widget_us": "their time"})
    assert got == {"widgets": FieldSpec("integer", "", "how many"), "widget_us": FieldSpec("number", "µs", "their time")}


@pytest.mark.parametrize("kind", ["fact", "run_source", "enricher"])
def test_a_plugins_unsuffixed_field_is_text(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    registry = Registry()
    monkeypatch.setattr(facts_pkg, "REGISTRY", registry)
    got = _register(registry, kind, "myplugin", {"widgets": "how many", "widget_bytes": "their size", "n": typed("count", "integer")})
    assert got == {
        "widgets": FieldSpec("text", "", "how many"),
        "widget_bytes": FieldSpec("integer", "bytes", "their size"),
        "n": FieldSpec("integer", "", "count"),
    }


def test_the_plugin_example_in_the_docs_registers_typed_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = (ROOT / "docs" / "writing-rules.md").read_text(encoding="utf-8")
    (code,) = re.findall(r"```python\n(# mypkg/facts\.py.*?)```", doc, re.S)
    registry = Registry()
    monkeypatch.setattr(facts_pkg, "REGISTRY", registry)
    space: dict[str, Any] = {"__name__": "mypkg.facts"}
    exec(compile(code, "writing-rules.md", "exec"), space)
    space["register"]()
    (added,) = registry.enrichers["kernel_groups"]
    assert added.fields == {
        "name_length": FieldSpec("integer", "", "characters in the kernel name"),
        "name_scan_us": FieldSpec("number", "µs", "time spent reading the name"),
    }
    assert added.fn(None, {"kernel": "ampere_sgemm"}) == {"name_length": 12, "name_scan_us": 0.0}
