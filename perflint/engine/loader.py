"""Loading rule files: built-in pack plus extra directories; a bad rule stops the run.

Every rule file, built-in or not, is read the same way: its YAML, the schema (rule_core.py), then
its names against the fact catalogue (scope fields, params, capabilities, template placeholders)."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from perflint.engine.message import placeholder_fields
from perflint.engine.rule_core import ENGINE_FIELDS, RuleCore, RuleSchemaError, parse_rule
from perflint.errors import RuleError
from perflint.facts import REGISTRY
from perflint.facts.builtin import load_all
from perflint.yaml_lines import yaml_line

# libyaml's loader parses ~10x faster than the pure-Python one; same safe tag set.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def builtin_rules_dir() -> Path:
    """Rules ship inside the wheel as perflint/builtin_rules; a source checkout uses ./rules."""
    packaged = Path(str(resources.files("perflint"))) / "builtin_rules"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent.parent / "rules"


class RuleProblems(RuleError):
    """A rule file with several schema problems: the line names them all, `problems` one each."""

    def __init__(self, source: str, problems: list[str]) -> None:
        super().__init__(source, "; ".join(problems))
        self.problems = problems


def _read_yaml(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RuleError(str(path), f"cannot read rule file: {exc.strerror or exc}") from None
    try:
        return yaml.load(text, Loader=_YAML_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise RuleError(str(path), f"invalid YAML{where}: {getattr(exc, 'problem', exc)}") from None


def load_rule_file(path: Path, data: Any = None) -> RuleCore:
    """A rule file checked against the schema and the fact catalogue (`data`: its YAML, when
    already read)."""
    if data is None:
        data = _read_yaml(path)
    try:
        rule = parse_rule(data)
    except RuleSchemaError as exc:
        raise RuleProblems(str(path), [_at_line(path, p) for p in exc.problems]) from None
    check_rule_against_facts(path, rule)
    return rule


_KEY = re.compile(r"^key '([^']+)'")


def _at_line(path: Path, problem: str) -> str:
    """`problem` ("key 'params.x.default': why") with the line of its key in the file."""
    m = _KEY.match(problem)
    if m is None:
        return problem
    line = yaml_line(path, [int(p) if p.isdigit() else p for p in m.group(1).split(".")], exact=True)
    return f"line {line}: {problem}" if line else problem


def check_rule_against_facts(path: Path, rule: RuleCore) -> None:
    load_all()
    if rule.scope not in REGISTRY.scopes():
        known = sorted(REGISTRY.scopes())
        raise RuleError(str(path), f"key 'scope': unknown scope '{rule.scope}' (known: {', '.join(known)})")
    fields = set(REGISTRY.fields_of(rule.scope))
    clash = fields & set(rule.params)
    if clash:
        raise RuleError(str(path), f"key 'params': {', '.join(sorted(clash))} shadows a field of scope '{rule.scope}'")
    unknown = rule.expression_names() - fields - set(rule.params) - set(ENGINE_FIELDS)
    if unknown:
        raise RuleError(
            str(path),
            f"key 'where/assert/impact': unknown name(s) {', '.join(sorted(unknown))} "
            f"(not a param, nor a field of scope '{rule.scope}')",
        )
    _check_placeholders(path, rule, fields)
    if rule.group is not None:
        bad = (set(rule.group.by) | set(rule.group.sum) | set(rule.group.union)) - fields
        if bad:
            raise RuleError(str(path), f"key 'group': unknown field(s) {', '.join(sorted(bad))} of scope '{rule.scope}'")
    bad_measure = set(rule.measure) - fields
    if bad_measure:
        raise RuleError(str(path), f"key 'measure': unknown field(s) {', '.join(sorted(bad_measure))}")
    bad_req = set(rule.requires) - set(REGISTRY.capabilities)
    if bad_req:
        raise RuleError(
            str(path), f"key 'requires': unknown capability {', '.join(sorted(bad_req))} (known: {', '.join(sorted(REGISTRY.capabilities))})"
        )


def _check_placeholders(path: Path, rule: RuleCore, fields: set[str]) -> None:
    """Every {placeholder} of the message and fix names a field of the scope, a param or a name the
    engine adds; the top row's are {top[field]} with a field of the scope."""
    names = fields | set(rule.params) | set(ENGINE_FIELDS)
    for key, template in (("message", rule.message), ("fix", rule.fix)):
        try:
            used = placeholder_fields(template)
        except ValueError as exc:
            raise RuleError(str(path), f"key '{key}': {exc}") from None
        unknown = {u for u in used if _head(u) not in names or (_head(u) == "top" and _top_field(u) not in fields)}
        if unknown:
            raise RuleError(
                str(path),
                f"key '{key}': unknown placeholder {', '.join('{' + n + '}' for n in sorted(unknown))} "
                f"(not a field of scope '{rule.scope}', a param, nor one of {', '.join(sorted(ENGINE_FIELDS))})",
            )


def _head(placeholder: str) -> str:
    return re.split(r"[.\[]", placeholder, maxsplit=1)[0]


def _top_field(placeholder: str) -> str | None:
    m = re.fullmatch(r"top\[([^\]]+)\]", placeholder)
    return m.group(1) if m else None


def rule_files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        raise RuleError(str(directory), "rule directory does not exist")
    return sorted(p for p in directory.rglob("*.y*ml") if p.suffix in (".yaml", ".yml") and not p.name.startswith("."))


def load_rules(extra_dirs: list[str] | None = None, include_builtin: bool = True) -> list[RuleCore]:
    dirs = ([builtin_rules_dir()] if include_builtin else []) + [Path(d) for d in (extra_dirs or [])]
    rules: list[RuleCore] = []
    seen: dict[str, Path] = {}
    for d in dirs:
        for f in rule_files(d):
            rule = load_rule_file(f)
            for ident in (rule.code, rule.name):
                if ident in seen:
                    raise RuleError(str(f), f"duplicate rule '{ident}' (also defined in {seen[ident]})")
                seen[ident] = f
            rules.append(rule)
    rules.sort(key=lambda r: r.code)
    return rules


__all__ = ["RuleProblems", "builtin_rules_dir", "check_rule_against_facts", "load_rule_file", "load_rules", "rule_files"]
