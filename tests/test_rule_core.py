"""The per-trace work sent to worker processes carries RuleCores, not the pydantic rule models:
a worker unpickles it without importing pydantic (that import costs more than reading a 20 MB
rank file), and the findings are the same as with the models."""

from __future__ import annotations

import dataclasses
import functools
import pickle
import pickletools
from pathlib import Path

from perflint.commands.check import _check_one
from perflint.config import Config, select_rules
from perflint.engine.loader import load_rules
from perflint.engine.rule import Rule
from perflint.engine.rule_core import RuleCore
from perflint.engine.run import check_trace, portable
from perflint.graph.load import load_trace
from tests.conftest import shared_trace


def _modules(data: bytes) -> set[str]:
    """The modules a pickle imports when it is loaded."""
    mods: set[str] = set()
    strings: list[str] = []
    for op, arg, _ in pickletools.genops(data):
        if op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE"):
            strings.append(arg)
        elif op.name == "STACK_GLOBAL":
            mods.add(strings[-2])
        elif op.name == "GLOBAL":
            mods.add(arg.split(" ")[0])
    return mods


def _active() -> list:
    return select_rules(load_rules([]), Config(), None, None, None)


def test_the_work_unpickles_without_pydantic() -> None:
    active = _active()
    assert active and all(isinstance(ar.rule, Rule) for ar in active)
    fn = functools.partial(_check_one, active=portable(active), include_edge_steps=False)
    mods = _modules(pickle.dumps(fn, protocol=pickle.HIGHEST_PROTOCOL))
    assert "perflint.engine.rule_core" in mods
    assert not {m for m in mods if m.startswith("pydantic") or m == "perflint.engine.rule"}, mods
    # the models themselves would have needed them (the check above can fail)
    whole = functools.partial(_check_one, active=active, include_edge_steps=False)
    assert "perflint.engine.rule" in _modules(pickle.dumps(whole, protocol=pickle.HIGHEST_PROTOCOL))


def test_rule_core_holds_what_evaluation_reads() -> None:
    rule = _active()[0].rule
    core = RuleCore.of(rule)
    for f in dataclasses.fields(RuleCore):
        assert getattr(core, f.name) == getattr(rule, f.name), f.name
    assert RuleCore.of(core) is core


def test_same_findings_with_rule_cores(tmp_path: Path) -> None:
    trace = load_trace(shared_trace("hta/negative_queue_length_values_check/rank0.json.gz"))
    active = _active()
    want = check_trace(trace, active)
    got = check_trace(load_trace(shared_trace("hta/negative_queue_length_values_check/rank0.json.gz")), portable(active))
    assert want.findings and got.findings == want.findings
    assert got.statuses == want.statuses
