"""The built-in rules follow the style docs/writing-rules.md sets out (thresholds in `where` and
`assert` are params; `assert` holds no share floor or-ed in), and that page's example is a valid rule that names every key of the schema."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import msgspec
import pytest

from perflint.engine.loader import load_rule_file, load_rules
from perflint.engine.rule_core import RuleCore
from tests.conftest import ROOT

DOC = (ROOT / "docs" / "writing-rules.md").read_text(encoding="utf-8")
RULES = load_rules()

# Literals a rule may write (true by definition, never tuned): structural bounds and percent.
DEFINITIONAL = {0, 1, 2, 100}
# Compared with these fields, a literal is a hardware generation.
GENERATION_FIELDS = {"compute_capability"}


def judgement_literals(text: str) -> list[float]:
    """Numbers in an expression that are not true by definition."""
    out: list[float] = []
    for node in ast.walk(ast.parse(text.strip(), mode="eval")):
        if not isinstance(node, ast.Compare):
            continue
        names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        for side in [node.left, *node.comparators]:
            if isinstance(side, ast.Constant) and type(side.value) in (int, float) and side.value not in DEFINITIONAL:
                if not names & GENERATION_FIELDS:
                    out.append(side.value)
    return out


def floors_in_assert(assert_: str, params: set[str]) -> list[str]:
    """Share floors or-ed into an assert (`... or share_pct < min_share_pct`): they belong in `where`."""
    out: list[str] = []
    for node in ast.walk(ast.parse(assert_.strip(), mode="eval")):
        if not (isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or)):
            continue
        for v in node.values:
            if (
                isinstance(v, ast.Compare)
                and isinstance(v.left, ast.Name)
                and v.left.id.endswith("share_pct")
                and isinstance(v.ops[0], (ast.Lt, ast.LtE))
                and isinstance(v.comparators[0], ast.Name)
                and v.comparators[0].id in params
            ):
                out.append(ast.unparse(v))
    return out


def test_the_checks_see_what_they_look_for() -> None:
    assert judgement_literals("share_pct >= 0.5 and kernel_count > 0 and compute_capability >= 70") == [0.5]
    assert floors_in_assert("tensor_cores != false or share_pct < m", {"m"}) == ["share_pct < m"]
    assert floors_in_assert("not (a > m and share_pct < m)", {"m"}) == []
    assert floors_in_assert("x >= t or kernel_share_pct <= m", {"t", "m"}) == ["kernel_share_pct <= m"]


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_thresholds_are_params(rule: RuleCore) -> None:
    for key, text in (("where", rule.where), ("assert", rule.assert_)):
        assert not judgement_literals(text), f"{rule.code} {key}: make {judgement_literals(text)} a param"


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_no_floor_or_ed_into_the_assert(rule: RuleCore) -> None:
    floors = floors_in_assert(rule.assert_, set(rule.params))
    assert not floors, f"{rule.code}: move {floors} into where"


def test_the_example_rule_is_valid_and_names_every_key(tmp_path: Path) -> None:
    block = re.search(r"```yaml\n(.*?)```", DOC, re.S)
    assert block is not None
    path = tmp_path / "XK001.yaml"
    path.write_text(block.group(1), encoding="utf-8")
    rule = load_rule_file(path)
    assert rule.code == "XK001" and rule.params
    for f in msgspec.structs.fields(RuleCore):
        assert re.search(rf"(^|`){f.encode_name}(:|`)", DOC, re.M), f"docs/writing-rules.md never names key '{f.encode_name}'"
