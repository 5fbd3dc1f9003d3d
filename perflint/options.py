"""The options of a check run, declared once: each field of `CheckOptions` is an option, with its
type and default, and its `Spec` (help, command-line spelling, whether it is also a config key or
an input of the GitHub Action). The CLI builds its parsers from them (commands/common.py),
`perflint.check()` takes them as keyword arguments, the pytest fixture passes them on, and
tests/cli/test_options.py holds action.yml and the config keys to them.

Cheap to import (the standard library and the findings' vocabulary): the pytest plugin reads it
at start-up.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal, get_args

from perflint.errors import UsageError
from perflint.findings import FAIL_ON, FailOn

PathArg = str | os.PathLike[str]
Selectors = str | Sequence[str] | None  # a list, or a comma-separated string as on the command line
ExecutorKind = Literal["process", "dask"]
EXECUTORS: tuple[ExecutorKind, ...] = get_args(ExecutorKind)
Group = Literal["rules", "input"]


# --- reading an option's value from text (the command line); ValueError says what is wrong --------


def read_count(text: str) -> int:
    """A count that must be 1 or more."""
    try:
        n = int(text)
    except ValueError:
        raise ValueError(f"not a whole number: {text!r}") from None
    if n <= 0:
        raise ValueError(f"must be 1 or more, not {n}")
    return n


def read_seconds(text: str) -> float:
    try:
        s = float(text)
    except ValueError:
        raise ValueError(f"not a number of seconds: {text!r}") from None
    if not s > 0 or s == float("inf"):
        raise ValueError("must be a positive number of seconds")
    return s


def read_size(text: str) -> int:
    """Bytes from '512M', '4G', '1.5GiB' or a plain number."""
    from perflint.readers.budget import parse_size  # the readers are not imported at start-up

    return parse_size(text)


def read_list(text: str) -> list[str]:
    """A comma-separated list."""
    return [s.strip() for s in text.split(",") if s.strip()]


@dataclass(frozen=True)
class Spec:
    """How an option is offered besides its name, type and default.

    `group`: "rules" (which rules run, against what, and what fails the gate) or "input" (how the
    traces are found and read; the commands that read traces without rules take these). `config`:
    also a key of the config file, spelled with dashes. `ci`: also an input of the GitHub Action,
    spelled with dashes. On the command line the option is `--name-with-dashes` unless `flags`
    names it; a bool is a switch; `read` turns its text into the value; `repeat`: one value per
    flag, given as often as needed."""

    help: str
    group: Group
    config: bool = False
    ci: bool = False
    flags: tuple[str, ...] = ()
    metavar: str | None = None
    read: Callable[[str], Any] | None = None
    repeat: bool = False
    choices: tuple[str, ...] = ()


def _option(default: Any, spec: Spec) -> Any:
    return field(default=default, metadata={"spec": spec})


@dataclass(frozen=True)
class CheckOptions:
    """What a check run takes besides the traces; the CLI fills it from its options,
    `perflint.check()` from its keyword arguments."""

    config: PathArg | None = _option(
        None, Spec("config file (default: .perflint.yaml / pyproject.toml)", "rules", ci=True, metavar="FILE")
    )
    select: Selectors = _option(
        None, Spec("only these rules (code, prefix, name, group)", "rules", config=True, metavar="SEL,...", read=read_list)
    )
    ignore: Selectors = _option(None, Spec("skip these rules", "rules", config=True, metavar="SEL,...", read=read_list))
    extend_select: Selectors = _option(
        None, Spec("add rules to the selection", "rules", config=True, metavar="SEL,...", read=read_list)
    )
    rule_dirs: Sequence[PathArg] = _option(
        (), Spec("extra directory of YAML rules; repeatable", "rules", config=True, flags=("--rule-dir",), metavar="DIR", repeat=True)
    )
    fail_on: FailOn | None = _option(
        None,
        Spec("lowest severity that fails the gate (exit 1); default: the config's, else error", "rules", config=True, ci=True, choices=FAIL_ON),
    )
    baseline: PathArg | None = _option(
        None, Spec("snapshot (or traces) to compare with: REG rules run", "rules", ci=True, metavar="FILE|TRACE|DIR")
    )
    allow_device_mismatch: bool = _option(False, Spec("compare with a baseline from another device", "rules"))
    accepted: PathArg | None = _option(
        None, Spec("accepted findings (perflint accept): fail only on new ones", "rules", ci=True, metavar="FILE")
    )
    input_format: str | None = _option(None, Spec("trace format, overriding detection: kineto, nsys, nvprof, mindspore, or a plugin reader's name", "input", metavar="NAME"))
    include_edge_steps: bool = _option(
        False, Spec("keep the first (warm-up) and last ProfilerStep, which are excluded by default", "input", config=True)
    )
    exclude: Sequence[str] = _option(
        (),
        Spec(
            "skip files matching GLOB (relative to a directory given, or a base name); repeatable",
            "input",
            config=True,
            metavar="GLOB",
            repeat=True,
        ),
    )
    jobs: int | None = _option(
        None, Spec("worker processes for rank files (default: all cores)", "input", flags=("--jobs", "-j"), metavar="N", read=read_count)
    )
    memory_budget: int | str | None = _option(
        None,
        Spec(
            "memory a trace's read may use, in bytes or as e.g. 2G (default: the memory available); "
            "a smaller budget reads in smaller slices, one at a time",
            "input",
            metavar="SIZE",
            read=read_size,
        ),
    )
    executor: ExecutorKind = _option(
        "process",
        Spec("where per-trace work runs: local worker processes (default) or a dask.distributed cluster", "input", choices=EXECUTORS),
    )
    scheduler: str | None = _option(
        None, Spec("dask scheduler address (tcp://host:8786) when the executor is dask; default: a local cluster", "input", metavar="ADDR")
    )
    timeout: float = _option(
        10.0,
        Spec(
            "when the executor is dask: seconds to reach the scheduler, and to wait while it has no worker (default 10)",
            "input",
            metavar="SECONDS",
            read=read_seconds,
        ),
    )


@dataclass(frozen=True)
class Option:
    """One field of CheckOptions, as the CLI, the docs and the tests read it."""

    name: str
    type: str  # as written in CheckOptions
    default: Any
    spec: Spec

    @property
    def dashed(self) -> str:
        """The name as the config file, the command line and action.yml spell it."""
        return self.name.replace("_", "-")


OPTIONS: tuple[Option, ...] = tuple(Option(f.name, str(f.type), f.default, f.metadata["spec"]) for f in fields(CheckOptions))
BY_NAME = {o.name: o for o in OPTIONS}
INPUT_OPTIONS = tuple(o.name for o in OPTIONS if o.spec.group == "input")


# --- the values as the run uses them: one form whatever the caller gave -------------------------


def selectors(value: Selectors, what: str) -> list[str] | None:
    """Selectors as a list: a string is split on commas, like the command line's."""
    if value is None:
        return None
    items = read_list(value) if isinstance(value, str) else list(value)
    if not all(isinstance(s, str) for s in items):
        raise UsageError(what, "selectors must be strings (rule codes, prefixes, names or groups)")
    return [s.strip() for s in items if s.strip()]


def path_or_none(value: PathArg | None) -> str | None:
    return None if value is None else os.fspath(value)


def budget(value: int | str | None) -> int | None:
    """The memory budget in bytes."""
    if not isinstance(value, str):
        return value
    try:
        return read_size(value)
    except ValueError as exc:
        raise UsageError("memory_budget", str(exc)) from None


def check_choices(opts: CheckOptions) -> None:
    """A UsageError naming the option whose value is not one of its choices."""
    for o in OPTIONS:
        value = getattr(opts, o.name)
        if o.spec.choices and value is not None and value not in o.spec.choices:
            raise UsageError(o.name, f"must be one of {', '.join(o.spec.choices)}, not {value!r}")
    if opts.scheduler and opts.executor != "dask":
        raise UsageError("--scheduler", "needs --executor dask")
