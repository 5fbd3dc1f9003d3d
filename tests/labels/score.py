"""Precision and recall per rule over the labelled corpus:
    python -m tests.labels.score [REPORT.json]
Without a report it runs `perflint check` over ../shared/traces and fixtures/{gpu,cpu} itself."""

from __future__ import annotations

import io
import json
import sys
from contextlib import redirect_stdout

from tests.labels import check_paths, check_report, scores


def _report() -> dict:
    from perflint.cli import main

    buf = io.StringIO()
    with redirect_stdout(buf):
        main(["check", *check_paths(), "--format", "json", "--fail-on", "never"])
    return json.loads(buf.getvalue())  # type: ignore[no-any-return]


def main(argv: list[str]) -> int:
    report = json.load(open(argv[0])) if argv else _report()
    verdicts, problems = check_report(report)
    table = scores(verdicts)
    print("| rule | labelled | found | false errors | false warnings | precision | recall |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for rule, c in table.items():
        tp, fn = c.get("tp", 0), c.get("fn", 0)
        fpe, fpw = c.get("fp_error", 0), c.get("fp_warning", 0)
        prec = f"{100 * tp / (tp + fpe + fpw):.0f}%" if tp + fpe + fpw else "-"
        rec = f"{100 * tp / (tp + fn):.0f}%" if tp + fn else "-"
        print(f"| {rule} | {tp + fn} | {tp} | {fpe} | {fpw} | {prec} | {rec} |")
    for p in problems + [p for v in verdicts for p in v.problems()]:
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
