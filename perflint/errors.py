"""Errors that reach the user as one line and exit code 2."""

from __future__ import annotations

from typing import Any

# The problem of a run whose paths all were excluded: not an unreadable trace, and counted apart.
NOTHING_TO_CHECK = "nothing to check"


class PerflintError(Exception):
    """A user-facing error: bad input, config or rule. Rendered as one line, exit code 2."""

    def __init__(self, source: str, problem: str) -> None:
        super().__init__(f"{source}: {problem}")
        self.source = source
        self.problem = problem

    def line(self) -> str:
        return f"{self.source}: {self.problem}"


class InputError(PerflintError):
    """A trace that cannot be read: truncated, corrupt, wrong format, missing fields."""


class PartialRead(InputError):
    """Some traces (ranks) of one input could not be read: `errors` says why, one line each, and
    `traces` holds those that were, which are still checked."""

    def __init__(self, errors: list[InputError], traces: list[Any]) -> None:
        super().__init__(errors[0].source, errors[0].problem)
        self.errors = errors
        self.traces = traces


class NotATrace(InputError):
    """A file that proves, once read, to hold no profiler events perflint reads (another tool's
    Chrome-format timeline). Named on the command line it is an error; found by a directory scan it
    is listed as skipped."""


class ConfigError(PerflintError):
    """A configuration file that is invalid."""


class RuleError(PerflintError):
    """A rule file that is invalid."""


class UsageError(PerflintError):
    """Bad command-line usage."""
