"""The rule schema, declared once (perflint/engine/rule_core.py): it reads every built-in rule,
refuses a bad rule file naming each problem by its key, gives the JSON Schema that accepts and
refuses what it does; the per-trace work sent to worker processes unpickles without pydantic; a
run with no config file never imports pydantic (0.2-0.3 s of every run's start)."""

from __future__ import annotations

import functools
import json
import os
import pickle
import pickletools
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from perflint.cli import main
from perflint.config import Config
from perflint.engine.loader import builtin_rules_dir, load_rule_file, load_rules, rule_files
from perflint.engine.rule_core import Group, Param, RuleCore, RuleSchemaError, json_schema, parse_rule
from perflint.engine.run import ActiveRule
from perflint.errors import RuleError
from perflint.run import check_one
from perflint.selection import select_rules
from tests.conftest import FIXTURES

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


def _data(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data


@pytest.mark.parametrize("path", BUILTIN, ids=lambda p: p.stem)
def test_builtin_rule_reads_into_the_schema(path: Path) -> None:
    data = _data(path)
    rule = parse_rule(data)
    assert rule.code == path.stem and rule.assert_ == data["assert"]
    assert rule.where == data.get("where", "true")
    for name, p in rule.params.items():  # defaults typed as declared: a float param's 1 reads as 1.0
        assert type(p.default).__name__ == p.type and p.default == data["params"][name]["default"]
    if "group" in data:
        assert isinstance(rule.group, Group) and list(rule.group.by) == data["group"].get("by", [])
    jsonschema.validate(data, json_schema())


GOOD: dict[str, Any] = _data(BUILTIN[0])
BAD = {
    "unknown key": (lambda r: r.update(extra=1), "extra"),
    "missing key": (lambda r: r.pop("fix"), "fix"),
    "alias spelled as the field": (lambda r: r.update(assert_=r.pop("assert")), "assert_"),
    "bad code": (lambda r: r.update(code="tc1"), "code"),
    "bad name": (lambda r: r.update(name="NoDots"), "name"),
    "bad severity": (lambda r: r.update(severity="fatal"), "severity"),
    "groups not a list": (lambda r: r.update(groups="a"), "groups"),
    "summary not text": (lambda r: r.update(summary=3), "summary"),
    "bool threshold": (lambda r: r.update(min_impact_us=True), "min_impact_us"),
    "param of the wrong type": (lambda r: r.update(params={"x": {"type": "int", "default": "ten", "description": "d"}}), "params.x"),
    "param with an unknown key": (lambda r: r.update(params={"x": {"type": "int", "default": 1, "description": "d", "y": 0}}), "params.x"),
    "reference without url": (lambda r: r.update(references=[{"title": "t"}]), "references.0"),
    "group top of 0": (lambda r: r.update(group={"top": 0}), "group.top"),
    "bad cap severity": (lambda r: r.update(at_most=[{"when": "true", "severity": "fatal"}]), "at_most.0.severity"),
}
BAD_EXPRESSIONS = {
    "where": (lambda r: r.update(where="__import__('os')"), "where"),
    "assert": (lambda r: r.update({"assert": "x ="}), "assert"),
    "impact": (lambda r: r.update(impact="lambda: 1"), "impact"),
    "min_impact_us": (lambda r: r.update(min_impact_us="[x for x in y]"), "min_impact_us"),
    "cap": (lambda r: r.update(at_most=[{"when": "a ** ", "severity": "info"}]), "at_most.0"),
}


@pytest.mark.parametrize("case", sorted({**BAD, **BAD_EXPRESSIONS}))
def test_a_bad_rule_names_the_key(case: str, tmp_path: Path) -> None:
    change, key = {**BAD, **BAD_EXPRESSIONS}[case]
    rule = json.loads(json.dumps(GOOD))
    change(rule)
    with pytest.raises(RuleSchemaError) as info:
        parse_rule(rule)
    problems = info.value.problems
    assert problems[0].startswith(f"key '{key}"), problems
    assert len(problems) == (2 if key == "assert_" else 1), problems  # a key spelled otherwise: unknown, and the right one missing
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(rule))
    with pytest.raises(RuleError) as err:
        load_rule_file(path)
    # The file's error names each problem at its key's line (a missing key has none).
    said = err.value.line().removeprefix(f"{path}: ").split("; ")
    lines = path.read_text().splitlines()
    for got, want in zip(said, problems, strict=True):
        m = re.fullmatch(r"line (\d+): (.*)", got)
        if m is None:
            assert got == want and want.endswith("required"), got
            continue
        assert m.group(2) == want
        key = [k for k in want.split("'")[1].split(".") if not k.isdigit()][-1]
        shown = lines[int(m.group(1)) - 1]
        assert key in shown or shown.lstrip().startswith("-"), (got, shown)
    if case in BAD and case != "param of the wrong type":  # the JSON Schema refuses it too (expressions and a default's type are beyond it)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(rule, json_schema())


def test_a_misspelt_key_and_a_wrong_type_read_as_a_person_would_write_them(tmp_path: Path) -> None:
    rule = json.loads(json.dumps(GOOD))
    rule["severty"] = rule.pop("severity")
    rule["params"] = {"x": {"type": "int", "default": 1.5, "description": "d"}}
    with pytest.raises(RuleSchemaError) as info:
        parse_rule(rule)
    text = "; ".join(info.value.problems)
    assert "key 'severty': unknown key (did you mean 'severity'?)" in text
    assert "expected an integer, got 1.5" in text and "a int" not in text


def test_every_problem_is_named_at_once() -> None:
    rule = {**GOOD, "code": "tc1", "summary": 3, "extra": 1, "group": {"top": 0}}
    del rule["fix"]
    with pytest.raises(RuleSchemaError) as info:
        parse_rule(rule)
    keys = sorted(p.split("'")[1] for p in info.value.problems)
    assert keys == ["code", "extra", "fix", "group.top", "summary"]


def test_a_rule_file_that_is_no_mapping(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text("- a\n- b\n")
    with pytest.raises(RuleError, match="must be a YAML mapping"):
        load_rule_file(path)


def test_param_defaults_are_coerced_to_their_type() -> None:
    rule = parse_rule({**GOOD, "params": {"x": {"type": "float", "default": 2, "description": "d"}}})
    assert rule.params["x"] == Param(type="float", default=2.0, description="d")
    assert isinstance(rule.params["x"].default, float)


def test_schema_command_prints_the_declaration(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    top = schema
    assert schema["title"] == "Rule" and top["additionalProperties"] is False and "RuleCore" not in json.dumps(schema)
    assert set(top["required"]) == {"code", "name", "severity", "summary", "rationale", "scope", "assert", "message", "fix"}
    assert top["properties"]["group"]["anyOf"][0] == {"$ref": "#/$defs/Group"}
    assert all("description" in v for k, v in top["properties"].items() if k not in ("severity", "groups", "summary", "rationale", "params", "references"))


def test_the_work_unpickles_without_pydantic() -> None:
    active = _active()
    assert active and all(type(ar.rule) is RuleCore for ar in active)
    fn = functools.partial(check_one, active=active, include_edge_steps=False)
    data = pickle.dumps(fn, protocol=pickle.HIGHEST_PROTOCOL)
    mods = _modules(data)
    assert "perflint.engine.rule_core" in mods
    assert not {m for m in mods if m.startswith("pydantic")}, mods
    assert pickle.loads(data).keywords["active"] == active


def test_dump_is_the_rule_file_with_every_key() -> None:
    rule = load_rules([])[0]
    dumped = rule.dump()
    assert parse_rule(dumped) == rule and json.loads(json.dumps(dumped)) == dumped
    assert list(dumped)[:3] == ["code", "name", "severity"] and "assert" in dumped and "assert_" not in dumped


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
