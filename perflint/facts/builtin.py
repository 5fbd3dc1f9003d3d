"""The built-in fact modules, imported by name: importing each registers its scopes, fields,
enrichers and capabilities (a test checks that every module that registers something is here).
Alphabetical: enrichers run in registration order, so the order is part of the rows' layout."""

from __future__ import annotations

from perflint import facts
from perflint.facts import (  # noqa: F401
    baseline,
    capabilities,
    collectives,
    comm,
    counters,
    cudnn,
    dataloader,
    gaps,
    kernel_groups,
    launch,
    matrix_owner,
    memcpy,
    memory,
    occupancy,
    ops,
    patterns,
    ranks,
    roofline,
    stages,
    steps,
    streams,
    syncs,
    trace,
)

_loaded = False


def load_all() -> None:
    """Every scope, field and capability registered: perflint's own (importing this module did it)
    and the plugins' (once)."""
    global _loaded
    if not _loaded:
        _loaded = True
        facts.load_plugins()
