"""Rules as plain RuleCores: the built-in pack is read into them without the pydantic model,
and gives what the model gives, file by file; the per-trace work sent to worker processes
unpickles without pydantic; a run with no config file and no rule files of its own never
imports pydantic (0.2-0.3 s of every run's start)."""

from __future__ import annotations

import functools
import os
import pickle
import pickletools
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from perflint.commands.check import _check_one
from perflint.config import Config
from perflint.engine.loader import builtin_rules_dir, load_builtin_file, load_rules, rule_files
from perflint.engine.rule import Rule
from perflint.engine.rule_core import RuleCore
from perflint.engine.run import ActiveRule, check_trace
from perflint.errors import RuleError
from perflint.graph.load import load_trace
from perflint.selection import select_rules
from tests.conftest import FIXTURES, shared_trace

BUILTIN = rule_files(builtin_rules_dir())


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


def _active() -> list[ActiveRule]:
    return select_rules(load_rules([]), Config(), None, None, None)


@pytest.mark.parametrize("path", BUILTIN, ids=lambda p: p.stem)
def test_builtin_rule_reads_as_the_model_reads_it(path: Path) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    fast = RuleCore.from_mapping(data)
    assert fast is not None  # else the pack would go through pydantic again, silently
    model = Rule.model_validate(data)
    assert fast == RuleCore.of(model)
    dumped = model.model_dump(by_alias=True)
    assert fast.dump() == dumped and list(fast.dump()) == list(dumped)  # the JSON report's rule table
    assert load_builtin_file(path) == fast


GOOD: dict[str, Any] = yaml.safe_load(BUILTIN[0].read_text(encoding="utf-8"))
ODD = {
    "unknown key": lambda r: r.update(extra=1),
    "missing key": lambda r: r.pop("fix"),
    "alias spelled as the field": lambda r: r.update(assert_=r.pop("assert")),
    "bad code": lambda r: r.update(code="tc1"),
    "bad name": lambda r: r.update(name="NoDots"),
    "bad severity": lambda r: r.update(severity="fatal"),
    "groups not a list": lambda r: r.update(groups="a"),
    "summary not text": lambda r: r.update(summary=3),
    "bad expression": lambda r: r.update(where="__import__('os')"),
    "bool threshold": lambda r: r.update(min_impact_us=True),
    "param of the wrong type": lambda r: r.update(params={"x": {"type": "int", "default": "ten", "description": "d"}}),
    "param with an unknown key": lambda r: r.update(params={"x": {"type": "int", "default": 1, "description": "d", "y": 0}}),
    "reference without url": lambda r: r.update(references=[{"title": "t"}]),
}


@pytest.mark.parametrize("name", sorted(ODD))
def test_anything_odd_goes_to_the_model(name: str, tmp_path: Path) -> None:
    rule = dict(GOOD)
    ODD[name](rule)
    assert RuleCore.from_mapping(rule) is None
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(rule))
    try:
        want: Any = RuleCore.of(Rule.model_validate(rule))
    except Exception:  # noqa: BLE001 - the model refuses it: the loader must say so
        with pytest.raises(RuleError, match="key '"):
            load_builtin_file(path)
    else:
        assert load_builtin_file(path) == want


def test_the_work_unpickles_without_pydantic() -> None:
    active = _active()
    assert active and all(type(ar.rule) is RuleCore for ar in active)
    fn = functools.partial(_check_one, active=active, include_edge_steps=False)
    mods = _modules(pickle.dumps(fn, protocol=pickle.HIGHEST_PROTOCOL))
    assert "perflint.engine.rule_core" in mods
    assert not {m for m in mods if m.startswith("pydantic") or m == "perflint.engine.rule"}, mods


def test_same_findings_as_the_models(tmp_path: Path) -> None:
    path = shared_trace("hta/negative_queue_length_values_check/rank0.json.gz")
    active = _active()
    models = [ActiveRule(RuleCore.of(Rule.model_validate(yaml.safe_load(p.read_text(encoding="utf-8")))), ar.severity, ar.params)
              for p, ar in zip(BUILTIN, sorted(active, key=lambda a: a.code))]  # fmt: skip
    assert [a.code for a in models] == sorted(a.code for a in active)
    want = check_trace(load_trace(path), models)
    got = check_trace(load_trace(path), active)
    assert want.findings and got.findings == want.findings
    assert got.statuses == want.statuses


_RUN = """
import sys
from perflint.cli import main
code = main(["check", sys.argv[1], "--format", "json", "--output", sys.argv[2]] + sys.argv[3:])
print(code, "pydantic" in sys.modules)
"""


@pytest.mark.parametrize("with_config", [False, True])
def test_a_run_without_config_never_imports_pydantic(with_config: bool, tmp_path: Path) -> None:
    trace = str(FIXTURES / "gpu" / "gemm_fp16_aligned.pt.trace.json.gz")
    extra = []
    if with_config:
        (tmp_path / "c.yaml").write_text("fail-on: never\n")
        extra = ["--config", str(tmp_path / "c.yaml")]
    out = subprocess.run(
        [sys.executable, "-c", _RUN, trace, str(tmp_path / "r.json"), *extra],
        cwd=tmp_path, env=dict(os.environ), capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert out[0] in ("0", "1") and (tmp_path / "r.json").stat().st_size > 0
    assert out[1] == str(with_config)  # a config file is validated with pydantic; nothing else needs it
