"""The labelled corpus proves the verdicts: one check over every real trace and fixture, compared
with tests/labels/ (what must fire, what must not, what must be skipped)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from perflint.cli import main
from tests.conftest import shared_trace
from tests.labels import check_paths, check_report, load, match, scores


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    shared_trace("MANIFEST.md")  # skips (or fails in CI) without the corpus
    import io
    from contextlib import redirect_stdout

    buf = io.StringIO()
    with redirect_stdout(buf):
        code = main(["check", *check_paths(), "--format", "json", "--fail-on", "never"])
    assert code == 0, buf.getvalue()[-2000:]
    return json.loads(buf.getvalue())  # type: ignore[no-any-return]


def test_every_trace_is_labelled_and_every_label_holds(report: dict[str, Any]) -> None:
    verdicts, problems = check_report(report)
    problems += [p for v in verdicts for p in v.problems()]
    assert not problems, "\n".join(problems)


def test_no_false_error_and_warning_precision(report: dict[str, Any]) -> None:
    table = scores(check_report(report)[0])
    assert sum(c.get("fp_error", 0) for c in table.values()) == 0
    tp = sum(c.get("tp", 0) for c in table.values())
    fpw = sum(c.get("fp_warning", 0) for c in table.values())
    assert tp and tp / (tp + fpw) >= 0.95


def test_the_labels_can_fail() -> None:
    """A report missing an expected finding, with an extra one, or with a forbidden one, fails."""
    labels = {"fire": [{"rule": "TC002", "severity": "warning", "subject": {"op_class": "conv"}}],
              "not_fire": [{"rule": "TC001", "why": "x"}]}  # fmt: skip
    good = [{"code": "TC002", "severity": "warning", "subject": {"op_class": "conv"}, "message": "m", "impact_us": 1.0}]
    assert match("t", labels, good).ok
    assert match("t", labels, []).missed
    extra = good + [{"code": "UTIL001", "severity": "error", "subject": {}, "message": "m"}]
    assert match("t", labels, extra).unexpected
    wrong_subject = [dict(good[0], subject={"op_class": "gemm"})]
    assert not match("t", labels, wrong_subject).ok
    forbidden = good + [{"code": "TC001", "severity": "info", "subject": {}, "message": "m"}]
    assert match("t", labels, forbidden).forbidden
    capped = {"fire": [dict(labels["fire"][0], impact_at_most_us=0.5)]}
    assert match("t", capped, good).too_big
    one_rank = {"fire": [dict(labels["fire"][0], ranks=[0])]}
    assert match("t", one_rank, good, rank=0).ok
    assert match("t", one_rank, good, rank=1).unexpected  # rank 1's finding is not expected there


def test_label_files_say_why() -> None:
    labels, skipped, run = load()
    assert labels and skipped
    for key, doc in labels.items():
        assert doc.get("reads"), key
        for lb in (doc.get("fire") or []) + (doc.get("not_fire") or []):
            assert lb.get("why"), (key, lb)
