"""Which rules run and which findings count, from the config and the command line.

Selection works like ruff's: selectors are a code (TC001), a code prefix (TC), a rule name or
dotted-name prefix (tensor-cores), a group, or ALL; the most specific matching selector wins
between `select`/`extend-select` and `ignore`. Suppressions mark findings the config accepts (by
rule, op, kernel, path; until an expiry date) and report the unused and expired ones.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import os
from pathlib import Path
from typing import Any

from perflint.config import Config, Suppression, config_problem
from perflint.engine.rule_core import RuleCore, coerce_param
from perflint.engine.run import ActiveRule
from perflint.errors import ConfigError
from perflint.findings import Finding, Severity
from perflint.yaml_lines import yaml_line


def selector_score(sel: str, rule: RuleCore) -> int:
    """How specifically `sel` names `rule` (0: not at all)."""
    if sel == rule.code:
        return 1000
    if sel == rule.name:
        return 900
    if sel == "ALL":
        return 1
    if rule.code.startswith(sel) and sel[:1].isupper():
        return 10 + len(sel)
    if rule.name.startswith(sel + "."):
        return 10 + len(sel)
    if sel in rule.groups:
        return 5
    return 0


def _best(selectors: list[str], rule: RuleCore) -> int:
    return max((selector_score(s, rule) for s in selectors), default=0)


def select_rules(
    rules: list[RuleCore],
    cfg: Config,
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    extend_select: list[str] | None = None,
) -> list[ActiveRule]:
    sel = select if select else (cfg.select if cfg.select is not None else ["ALL"])
    sel = sel + cfg.extend_select + (extend_select or [])
    ign = cfg.ignore + (ignore or [])
    # Each unknown selector is named where it was written: the option, or the config's line.
    for what, given in (("select", select), ("extend_select", extend_select), ("ignore", ignore)):
        for s in given or []:
            if not _known(s, rules):
                raise ConfigError(what, _no_rule(s, rules))
    for key, given in (("select", cfg.select or []), ("extend-select", cfg.extend_select), ("ignore", cfg.ignore)):
        for i, s in enumerate(given):
            if not _known(s, rules):
                raise ConfigError(*_config_where(cfg, [key, i], f"key '{key}': {_no_rule(s, rules)}"))
    for key in cfg.rules:  # an override of a rule that does not exist would silently do nothing
        if not _known(key, rules):
            raise ConfigError(*_override_where(cfg, key, f"key 'rules.{key}': {_no_rule(key, rules)}"))
    active: list[ActiveRule] = []
    for r in rules:
        if _best(sel, r) <= _best(ign, r):
            continue
        params = r.defaults()
        severity: Severity = r.severity
        for key, ov in cfg.rules.items():
            if not selector_score(key, r):
                continue
            if ov.severity:
                severity = ov.severity
            for pk, pv in ov.params.items():
                if pk not in r.params:
                    known = ", ".join(sorted(r.params)) or "none"
                    raise ConfigError(
                        *_override_where(cfg, key, f"key 'rules.{key}.params.{pk}': rule {r.code} has no param '{pk}' (its params: {known})", ["params", pk])
                    )
                try:
                    params[pk] = coerce_param(r.params[pk].type, pv)
                except ValueError as exc:
                    raise ConfigError(*_override_where(cfg, key, f"key 'rules.{key}.params.{pk}': {exc}", ["params", pk])) from None
        active.append(ActiveRule(rule=r, severity=severity, params=params))
    return active


def _known(sel: str, rules: list[RuleCore]) -> bool:
    return sel == "ALL" or any(selector_score(sel, r) for r in rules)


def _no_rule(sel: str, rules: list[RuleCore]) -> str:
    """"selector 'X' matches no rule", with the closest code, name or group when one is close."""
    import difflib

    names = {n for r in rules for n in (r.code, r.name, *r.groups)}
    # Case-blind, and on a tie the first in order (TC001 before TC003).
    score, best = min(((-difflib.SequenceMatcher(None, sel.lower(), n.lower()).ratio(), n) for n in names), default=(0.0, ""))
    return f"selector '{sel}' matches no rule" + (f" (did you mean '{best}'?)" if -score >= 0.6 else "")


def _override_where(cfg: Config, key: str, problem: str, sub: list[Any] | None = None) -> tuple[str, str]:
    """A rule override's error, at its line when the config is YAML."""
    return _config_where(cfg, ["rules", key, *(sub or [])], problem)


def _config_where(cfg: Config, loc: list[Any], problem: str) -> tuple[str, str]:
    """A config error at the line of `loc` when the config is YAML. Merged configs (`extends`)
    name the last file read; the key's line is looked up there."""
    if not cfg.source:
        return "config", problem
    path = Path(cfg.source)
    return config_problem(path, [(yaml_line(path, loc), problem)])


def _matches(s: Suppression, f: Finding, rule: RuleCore) -> bool:
    if not selector_score(s.rule, rule):
        return False
    if s.op and not any(fnmatch.fnmatchcase(o, s.op) for o in [*(f.op_stack or []), f.op or ""]):
        return False
    if s.kernel and not fnmatch.fnmatchcase(f.kernel or "", s.kernel):
        return False
    if s.path and not (fnmatch.fnmatch(f.trace, s.path) or fnmatch.fnmatch(os.path.basename(f.trace), s.path)):
        return False
    return True


def apply_suppressions(
    findings: list[Finding], rules: dict[str, RuleCore], cfg: Config, today: dt.date | None = None
) -> list[str]:
    """Mark suppressed findings; return notices for unused and expired suppressions."""
    today = today or dt.date.today()
    used = [0] * len(cfg.suppress)
    notices: list[str] = []
    for i, s in enumerate(cfg.suppress):
        if s.expires and s.expires < today:
            notices.append(f"suppression #{i + 1} ({s.rule}) expired on {s.expires}: its findings are reported again")
    for f in findings:
        for i, s in enumerate(cfg.suppress):
            if s.expires and s.expires < today:
                continue
            if _matches(s, f, rules[f.code]):
                f.suppressed = s.reason
                used[i] += 1
                break
    for i, s in enumerate(cfg.suppress):
        if used[i] == 0 and not (s.expires and s.expires < today):
            what = ", ".join(f"{k}={v}" for k, v in (("op", s.op), ("kernel", s.kernel), ("path", s.path)) if v)
            notices.append(f"unused suppression #{i + 1} ({s.rule}{': ' + what if what else ''}): it matched no finding")
    return notices
