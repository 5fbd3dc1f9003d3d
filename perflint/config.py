"""Configuration: `--config`, else `.perflint.yaml`, else `[tool.perflint]` in pyproject.toml.

Which rules run (`select`, `ignore`, overrides) and which findings are suppressed is decided from
it in `perflint.selection`.
"""

from __future__ import annotations

import copy
import datetime as dt
import os
import sys
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from perflint.errors import ConfigError
from perflint.findings import FailOn, Severity
from perflint.yaml_lines import yaml_line

# Plain dataclasses, which pydantic validates where a config file is read (`_validate`): a run
# without a config file never imports pydantic. Unknown keys are errors.
_STRICT = {"extra": "forbid"}


@dataclass
class RuleOverride:
    __pydantic_config__ = _STRICT
    severity: Severity | None = None
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class Suppression:
    __pydantic_config__ = _STRICT
    rule: str  # code, prefix, name or group
    reason: str
    op: str | None = None  # glob on any op of the finding's op stack
    kernel: str | None = None  # glob on the kernel name
    path: str | None = None  # glob on the trace path
    expires: dt.date | None = None


@dataclass
class Config:
    __pydantic_config__ = _STRICT
    extends: str | list[str] | None = None
    select: list[str] | None = None
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    rules: dict[str, RuleOverride] = field(default_factory=dict)
    rule_dirs: list[str] = field(default_factory=list)
    suppress: list[Suppression] = field(default_factory=list)
    fail_on: FailOn | None = None
    include_edge_steps: bool | None = None
    exclude: list[str] = field(default_factory=list)  # globs of files a directory scan skips (as --exclude)
    source: str | None = None  # the file it came from; not a key of the file


def _toml() -> Any:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    return tomllib


def _read_mapping(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(str(path), f"cannot read config: {exc.strerror or exc}") from None
    if path.name == "pyproject.toml":
        tomllib = _toml()
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(str(path), f"invalid TOML: {exc}") from None
        data = doc.get("tool", {}).get("perflint")
        return data if isinstance(data, dict) else {}
    import yaml

    try:
        # libyaml's loader parses ~10x faster than the pure-Python one; same safe tag set.
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        raise ConfigError(str(path), f"{where}invalid YAML: {getattr(exc, 'problem', exc)}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(str(path), "config must be a mapping")
    return data


def _checked(path: Path, data: dict[str, Any], spelled: dict[Any, Any]) -> Config:
    from pydantic import TypeAdapter, ValidationError

    try:
        return TypeAdapter(Config).validate_python(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            loc = list(err["loc"])
            if loc:
                loc[0] = spelled.get(loc[0], loc[0])  # the key as the file spells it
            problems.append((yaml_line(path, loc), _problem(loc, err)))
        problems.sort(key=lambda lp: lp[0] or 0)  # in the file's order
        raise ConfigError(*config_problem(path, problems)) from None


def config_problem(path: Path, problems: list[tuple[int | None, str]]) -> tuple[str, str]:
    """(source, problem) of a ConfigError listing every problem, each with its line, on one line;
    the source stays the file's path (what the Python API's callers compare)."""
    return str(path), "; ".join(f"line {n}: {p}" if n else p for n, p in problems)


def _keys(cls: type) -> list[str]:
    """A config mapping's keys, as a file spells them."""
    return [f.name.replace("_", "-") for f in fields(cls) if f.name != "source"]


_KNOWN = {(): _keys(Config), ("rules",): _keys(RuleOverride), ("suppress",): _keys(Suppression)}


def _problem(loc: list[Any], err: Any) -> str:
    """A pydantic error in the words of a config file: which key, what is wrong with it."""
    kind = err["type"]
    parents = tuple(p for p in loc[:-1] if isinstance(p, str) and p in ("rules", "suppress"))[:1]
    key = ".".join(str(p) for p in loc)
    if kind in ("unexpected_keyword_argument", "extra_forbidden"):
        known = _KNOWN.get(parents, [])
        import difflib

        close = difflib.get_close_matches(str(loc[-1]).replace("_", "-"), known, n=1)
        hint = f"did you mean '{close[0]}'?" if close else f"known keys: {', '.join(known)}"
        return f"unknown key '{key}' ({hint})"
    if kind in ("missing", "missing_argument"):
        return f"key '{key}' is required"
    given = err.get("input")
    shown = repr(given) if not isinstance(given, (dict, list)) else type(given).__name__
    if kind == "literal_error":
        choices = err.get("ctx", {}).get("expected", "").replace("'", "").replace(" or ", ", ")
        return f"key '{key}': {shown} is not one of: {choices}"
    msg = str(err["msg"]).replace("Input should be", "should be")
    return f"key '{key}': {msg}, not {shown}"


def _validate(path: Path, data: dict[str, Any]) -> Config:
    # The file's keys are spelled with dashes (fail-on) or underscores (fail_on), both taken.
    spelled = {k.replace("-", "_") if isinstance(k, str) else k: k for k in data}
    data = {n: data[k] for n, k in spelled.items()}
    if "source" in data:
        raise ConfigError(str(path), "key 'source': not a config key")
    cfg = _checked(path, data, spelled) if data else Config()
    for i, s in enumerate(cfg.suppress):
        if not s.reason.strip():
            raise ConfigError(
                *config_problem(path, [(yaml_line(path, ["suppress", i, "reason"]), f"key 'suppress.{i}.reason': a suppression needs a non-empty reason")])
            )
    cfg.source = str(path)
    base = path.parent
    cfg.rule_dirs = [str((base / d).resolve()) if not os.path.isabs(d) else d for d in cfg.rule_dirs]
    return cfg


def _merge(base: Config, child: Config) -> Config:
    merged = copy.deepcopy(base)
    if child.select is not None:
        merged.select = child.select
    merged.extend_select = base.extend_select + child.extend_select
    merged.ignore = base.ignore + child.ignore
    for code, ov in child.rules.items():
        prev = merged.rules.get(code, RuleOverride())
        merged.rules[code] = RuleOverride(
            severity=ov.severity or prev.severity, params={**prev.params, **ov.params}
        )
    merged.rule_dirs = base.rule_dirs + child.rule_dirs
    merged.suppress = base.suppress + child.suppress
    merged.exclude = base.exclude + child.exclude
    merged.fail_on = child.fail_on or base.fail_on
    merged.include_edge_steps = child.include_edge_steps if child.include_edge_steps is not None else base.include_edge_steps
    merged.source = child.source
    return merged


def load_config_file(path: Path, _chain: tuple[Path, ...] = ()) -> Config:
    path = path.resolve()
    if path in _chain:
        raise ConfigError(str(path), "circular 'extends'")
    if not path.is_file():
        raise ConfigError(str(path), "config file not found")
    cfg = _validate(path, _read_mapping(path))
    parents = [cfg.extends] if isinstance(cfg.extends, str) else list(cfg.extends or [])
    result = Config()
    for p in parents:
        target = Path(p) if os.path.isabs(p) else path.parent / p
        result = _merge(result, load_config_file(target, (*_chain, path)))
    return _merge(result, cfg)


def _has_perflint_table(path: Path) -> bool:
    """A [tool.perflint] table, not just the words (perflint's own pyproject.toml has them in a
    comment); an unparsable file that mentions it counts, so that its error is reported."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if "perflint" not in text:
        return False
    tomllib = _toml()
    try:
        return isinstance(tomllib.loads(text).get("tool", {}).get("perflint"), dict)
    except tomllib.TOMLDecodeError:
        return "[tool.perflint" in text


def find_config(start: Path | None = None) -> Path | None:
    """`.perflint.yaml` (or .yml) in the working directory or a parent, else a pyproject.toml with
    a [tool.perflint] table."""
    here = (start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        for name in (".perflint.yaml", ".perflint.yml"):
            if (d / name).is_file():
                return d / name
        pp = d / "pyproject.toml"
        if pp.is_file() and _has_perflint_table(pp):
            return pp
        if (d / ".git").exists():
            break
    return None


def load_config(explicit: str | None) -> Config:
    if explicit:
        return load_config_file(Path(explicit))
    found = find_config()
    return load_config_file(found) if found else Config()
