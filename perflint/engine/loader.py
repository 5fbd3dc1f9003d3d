"""Loading rule files: built-in pack plus extra directories; a bad rule stops the run.

Rules from outside (extra directories) are validated with the pydantic model; the built-in pack
is read straight into RuleCores (see rule_core.py), and any of its files that does not read
cleanly that way goes through the model too."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from perflint.engine.rule_core import ENGINE_FIELDS, RuleCore
from perflint.errors import RuleError
from perflint.facts import RUN_SOURCES, SOURCES, fields_of, load_all

if TYPE_CHECKING:
    from perflint.engine.rule import Rule

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


def _fmt_loc(loc: tuple[object, ...]) -> str:
    parts = [str(p) for p in loc if p not in ("function-after[_default_matches_type(), Param]",)]
    return ".".join(parts) or "(top level)"


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


def load_rule_file(path: Path, data: Any = None) -> Rule:
    """A rule file validated by the model (`data`: its YAML, when already read)."""
    from pydantic import ValidationError

    from perflint.engine.rule import Rule

    if data is None:
        data = _read_yaml(path)
    if not isinstance(data, dict):
        raise RuleError(str(path), "a rule file must be a YAML mapping")
    try:
        rule = Rule.model_validate(data)
    except ValidationError as exc:
        problems = [f"key '{_fmt_loc(tuple(e['loc']))}': {e['msg']}" for e in exc.errors()]
        raise RuleProblems(str(path), problems) from None
    check_rule_against_facts(path, RuleCore.of(rule))
    return rule


def check_rule_against_facts(path: Path, rule: RuleCore) -> None:
    load_all()
    if rule.scope not in SOURCES and rule.scope not in RUN_SOURCES:
        known = sorted([*SOURCES, *RUN_SOURCES])
        raise RuleError(str(path), f"key 'scope': unknown scope '{rule.scope}' (known: {', '.join(known)})")
    fields = set(fields_of(rule.scope))
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
    try:
        names = rule.template_names()
    except ValueError as exc:
        raise RuleError(str(path), f"key 'message/fix': {exc}") from None
    unknown = names - fields - set(rule.params) - set(ENGINE_FIELDS)
    if unknown:
        raise RuleError(
            str(path),
            f"key 'message/fix': placeholder(s) {', '.join('{' + n + '}' for n in sorted(unknown))} name no field "
            f"of scope '{rule.scope}' nor a param",
        )
    if rule.group is not None:
        bad = (set(rule.group.by) | set(rule.group.sum) | set(rule.group.union)) - fields
        if bad:
            raise RuleError(str(path), f"key 'group': unknown field(s) {', '.join(sorted(bad))} of scope '{rule.scope}'")
    bad_measure = set(rule.measure) - fields
    if bad_measure:
        raise RuleError(str(path), f"key 'measure': unknown field(s) {', '.join(sorted(bad_measure))}")
    from perflint.facts import CAPABILITIES

    bad_req = set(rule.requires) - set(CAPABILITIES)
    if bad_req:
        raise RuleError(
            str(path), f"key 'requires': unknown capability {', '.join(sorted(bad_req))} (known: {', '.join(sorted(CAPABILITIES))})"
        )


def rule_files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        raise RuleError(str(directory), "rule directory does not exist")
    return sorted(p for p in directory.rglob("*.y*ml") if p.suffix in (".yaml", ".yml") and not p.name.startswith("."))


def load_builtin_file(path: Path) -> RuleCore:
    """A built-in rule file, read without the model when it reads cleanly."""
    data = _read_yaml(path)
    rule = RuleCore.from_mapping(data)
    if rule is None:
        return RuleCore.of(load_rule_file(path, data))
    check_rule_against_facts(path, rule)
    return rule


def load_rules(extra_dirs: list[str] | None = None, include_builtin: bool = True) -> list[RuleCore]:
    dirs = ([builtin_rules_dir()] if include_builtin else []) + [Path(d) for d in (extra_dirs or [])]
    rules: list[RuleCore] = []
    seen: dict[str, Path] = {}
    for i, d in enumerate(dirs):
        for f in rule_files(d):
            rule = load_builtin_file(f) if include_builtin and i == 0 else RuleCore.of(load_rule_file(f))
            for ident in (rule.code, rule.name):
                if ident in seen:
                    raise RuleError(str(f), f"duplicate rule '{ident}' (also defined in {seen[ident]})")
                seen[ident] = f
            rules.append(rule)
    rules.sort(key=lambda r: r.code)
    return rules


__all__ = ["builtin_rules_dir", "load_builtin_file", "load_rule_file", "load_rules", "rule_files"]
