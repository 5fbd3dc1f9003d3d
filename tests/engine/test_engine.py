"""Rule format validation, the expression language, config selection and suppressions,
and extensibility (a user YAML rule dir; a Python entry point adding a metric)."""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from perflint.cli import main
from perflint.engine.expr import ExprError, compile_expr
from tests.builder import TraceBuilder

GOOD_RULE = {
    "code": "XT001",
    "name": "custom.long-kernels",
    "severity": "warning",
    "groups": ["custom"],
    "summary": "kernels longer than a threshold",
    "rationale": "test rule",
    "scope": "kernel_groups",
    "params": {"max_mean_us": {"type": "float", "default": 100.0, "description": "threshold"}},
    "where": "category == 'gemm'",
    "measure": ["kernel", "mean_us"],
    "assert": "mean_us <= max_mean_us",
    "message": "{kernel} mean {mean_us:.0f} us > {max_mean_us:.0f} us",
    "impact": "time_us - count * max_mean_us",
    "fix": "make it faster",
}


def _trace(tmp_path: Path) -> str:
    b = TraceBuilder()
    b.op("aten::mm", 0, 50, dims=[[64, 64], [64, 64]], types=["float", "float"])
    b.kernel("ampere_sgemm_128x64_nn", 100, 400, launch_ts=10)
    b.op("aten::add", 60, 20)
    b.kernel("vectorized_elementwise_kernel", 600, 5, launch_ts=65)
    return b.write(tmp_path / "t.json")


def _write_rule(d: Path, data: dict, name: str = "XT001.yaml") -> Path:
    d.mkdir(parents=True, exist_ok=True)
    p = d / name
    p.write_text(yaml.safe_dump(data))
    return p


# --- expressions --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["__import__('os')", "x.__class__", "(lambda: 1)()", "open('f')", "[i for i in x]", "x := 1", "f'{x}'"],
)
def test_expressions_reject_anything_outside_the_whitelist(text: str) -> None:
    with pytest.raises(ExprError):
        compile_expr(text)


def test_expressions_are_none_safe() -> None:
    assert compile_expr("x > 3")({"x": None}) is False
    assert compile_expr("x > 3 and y in ['a', 'b']")({"x": 4, "y": "b"}) is True
    assert compile_expr("ceil_to(x, 8)")({"x": 37}) == 40
    assert compile_expr("a / b")({"a": 1, "b": 0}) is None
    assert compile_expr("matches(k, 'gemv')")({"k": "gemv2T_kernel"}) is True


# --- rule files ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mutate", "expect"),
    [
        (lambda r: r.pop("fix"), "key 'fix': required"),
        (lambda r: r.update(code="tc1"), "key 'code'"),
        (lambda r: r.update(severity="fatal"), "key 'severity'"),
        (lambda r: r.update(scope="nope"), "unknown scope 'nope'"),
        (lambda r: r.update(where="undefined_field > 1"), "unknown name(s) undefined_field"),
        (lambda r: r.update(where="__import__('os')"), "key 'where"),
        (lambda r: r["params"]["max_mean_us"].update(default="ten"), "key 'params.max_mean_us"),
        (lambda r: r.update(measure=["nope"]), "key 'measure'"),
        (lambda r: r.update(requires=["time_machine"]), "key 'requires'"),
    ],
)
def test_bad_rule_stops_the_run_naming_file_key_and_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], mutate, expect: str
) -> None:
    rule = json.loads(json.dumps(GOOD_RULE))
    mutate(rule)
    path = _write_rule(tmp_path / "rules", rule)
    rc = main(["check", _trace(tmp_path), "--rule-dir", str(tmp_path / "rules")])
    err = capsys.readouterr().err
    assert rc == 2
    assert str(path) in err and expect in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_invalid_yaml_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "rules"
    d.mkdir()
    (d / "bad.yaml").write_text("code: [unclosed\n")
    assert main(["rules", "validate", str(d / "bad.yaml")]) == 2
    assert "invalid YAML at line" in capsys.readouterr().err


def test_rules_schema_is_json_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert {"code", "name", "severity", "assert", "fix"} <= set(schema["properties"])


# --- extensibility ------------------------------------------------------------------------


def test_user_rule_dir_from_config_produces_findings(tmp_path: Path, capsys, monkeypatch) -> None:
    _write_rule(tmp_path / "perf_rules", GOOD_RULE)
    (tmp_path / ".perflint.yaml").write_text("rule-dirs: [perf_rules]\nselect: [custom]\n")
    monkeypatch.chdir(tmp_path)
    rc = main(["check", _trace(tmp_path), "--format", "json", "--fail-on", "warning"])
    doc = json.loads(capsys.readouterr().out)
    (t,) = doc["traces"]
    assert rc == 1
    assert [f["code"] for f in t["findings"]] == ["XT001"]
    assert t["findings"][0]["message"] == "ampere_sgemm_128x64_nn mean 400 us > 100 us"
    assert t["findings"][0]["impact_us"] == pytest.approx(300.0)


def test_entry_point_metric_used_by_a_yaml_rule(tmp_path: Path, capsys, monkeypatch) -> None:
    pkg = tmp_path / "site"
    (pkg / "flopsplugin").mkdir(parents=True)
    (pkg / "flopsplugin" / "__init__.py").write_text(
        textwrap.dedent(
            """
            from perflint.facts import enricher

            def register():
                @enricher("kernel_groups", fields={"name_length": "length of the kernel name"})
                def _len(ctx, row):
                    return {"name_length": len(row["kernel"])}
            """
        )
    )
    dist = pkg / "flopsplugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: flopsplugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[perflint.facts]\nflops = flopsplugin:register\n")
    monkeypatch.syspath_prepend(str(pkg))
    from perflint.facts import load_plugins
    from perflint.facts.builtin import load_all

    load_all()
    assert "flops" in load_plugins()
    rule = dict(GOOD_RULE, code="XT002", name="custom.long-names", where="true", assert_=None)
    rule.pop("assert_")
    rule["assert"] = "name_length < 20"
    rule["message"] = "{kernel} has a {name_length}-character name"
    rule.pop("impact")
    _write_rule(tmp_path / "r", rule, "XT002.yaml")
    rc = main(["check", _trace(tmp_path), "--rule-dir", str(tmp_path / "r"), "--select", "XT002", "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    msgs = sorted(f["message"] for f in doc["traces"][0]["findings"])
    assert rc == 0  # warning < default fail-on error
    assert msgs == [
        "ampere_sgemm_128x64_nn has a 22-character name",
        "vectorized_elementwise_kernel has a 29-character name",
    ]
    sys.modules.pop("flopsplugin", None)


# --- config -------------------------------------------------------------------------------


def _codes(capsys, argv: list[str]) -> list[str]:
    main(argv + ["--format", "json", "--fail-on", "never"])
    out = capsys.readouterr().out
    return sorted({s["code"] for t in json.loads(out)["traces"] for s in t["statuses"]})


def test_select_ignore_by_code_prefix_name_group(tmp_path: Path, capsys) -> None:
    _write_rule(tmp_path / "r", GOOD_RULE)
    _write_rule(tmp_path / "r", dict(GOOD_RULE, code="XT002", name="custom.other", groups=["extra"]), "XT002.yaml")
    base = ["check", _trace(tmp_path), "--rule-dir", str(tmp_path / "r")]
    assert _codes(capsys, base + ["--select", "XT"]) == ["XT001", "XT002"]
    assert _codes(capsys, base + ["--select", "XT", "--ignore", "XT002"]) == ["XT001"]
    assert _codes(capsys, base + ["--select", "custom.other"]) == ["XT002"]
    assert _codes(capsys, base + ["--select", "extra"]) == ["XT002"]
    assert _codes(capsys, base + ["--select", "XT001", "--ignore", "XT"]) == ["XT001"]  # more specific wins


def test_unknown_selector_is_a_config_error(tmp_path: Path, capsys) -> None:
    """Named where it was written (the option, or the config file's line), with the closest rule."""
    assert main(["check", _trace(tmp_path), "--select", "NOPE123"]) == 2
    assert capsys.readouterr().err == "perflint: error: select: selector 'NOPE123' matches no rule\n"
    assert main(["check", _trace(tmp_path), "--ignore", "TC00l"]) == 2
    assert capsys.readouterr().err == "perflint: error: ignore: selector 'TC00l' matches no rule (did you mean 'TC001'?)\n"
    cfg = tmp_path / "perflint.yaml"
    cfg.write_text("select:\n  - TC\n  - tensor-core\n")
    assert main(["check", _trace(tmp_path), "--config", str(cfg), "--select", "DIM"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"perflint: error: {cfg}: line 3: key 'select': selector 'tensor-core' matches no rule (did you mean 'tensor-cores"), err


def test_pyproject_config_params_severity_and_extends(tmp_path: Path, capsys, monkeypatch) -> None:
    _write_rule(tmp_path / "r", GOOD_RULE)
    (tmp_path / "base.yaml").write_text("rules:\n  XT001: {severity: error}\n")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.perflint]\nextends = "base.yaml"\nrule-dirs = ["r"]\nselect = ["XT001"]\n'
        "[tool.perflint.rules.XT001.params]\nmax_mean_us = 500.0\n"
    )
    monkeypatch.chdir(tmp_path)
    trace = _trace(tmp_path)
    main(["check", trace, "--format", "json"])
    assert json.loads(capsys.readouterr().out)["traces"][0]["findings"] == []  # 400 us < 500 us
    (tmp_path / "pyproject.toml").write_text('[tool.perflint]\nextends = "base.yaml"\nrule-dirs = ["r"]\nselect = ["XT001"]\n')
    assert main(["check", trace, "--format", "json"]) == 1  # severity raised to error by extends
    (f,) = json.loads(capsys.readouterr().out)["traces"][0]["findings"]
    assert f["severity"] == "error"


def test_bad_config_key_exits_2(tmp_path: Path, capsys) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("selec: [TC]\n")
    assert main(["check", _trace(tmp_path), "--config", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert str(cfg) in err and "selec" in err


def test_suppressions_need_reason_expire_and_unused_are_reported(tmp_path: Path, capsys) -> None:
    _write_rule(tmp_path / "r", GOOD_RULE)
    trace = _trace(tmp_path)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"rule-dirs: [{tmp_path / 'r'}]\nselect: [XT001]\nsuppress:\n  - {{rule: XT001, op: 'aten::mm'}}\n")
    assert main(["check", trace, "--config", str(cfg)]) == 2
    assert "reason" in capsys.readouterr().err
    cfg.write_text(
        f"rule-dirs: [{tmp_path / 'r'}]\nselect: [XT001]\nfail-on: warning\nsuppress:\n"
        "  - {rule: XT001, op: 'aten::mm', reason: 'known, tracked in #12'}\n"
        "  - {rule: XT001, kernel: '*conv*', reason: 'never matches'}\n"
        "  - {rule: custom, path: '*.json', reason: 'old', expires: 2020-01-01}\n"
    )
    assert main(["check", trace, "--config", str(cfg), "--format", "json"]) == 0
    out, err = capsys.readouterr()
    (f,) = json.loads(out)["traces"][0]["findings"]
    assert f["suppressed"] == "known, tracked in #12"
    assert "unused suppression #2" in err
    assert "expired on 2020-01-01" in err


def test_pyproject_counts_only_with_a_perflint_table(tmp_path: Path) -> None:
    """perflint's own pyproject.toml names [tool.perflint] in a comment: that is no config (it
    cost every run from the checkout a pydantic import), a table is, and so is a broken file
    that mentions it (its error is then reported)."""
    from perflint.config import find_config

    (tmp_path / ".git").mkdir()
    pp = tmp_path / "pyproject.toml"
    pp.write_text('[project]\nname = "x"  # [tool.perflint] in pyproject.toml works too\n')
    assert find_config(tmp_path) is None
    pp.write_text('[project]\nname = "x"\n\n[tool.perflint.rules.TC001]\nseverity = "info"\n')
    assert find_config(tmp_path) == pp
    pp.write_text("[tool.perflint\nselect = [\n")
    assert find_config(tmp_path) == pp


@pytest.mark.parametrize("key", ["fail-on", "fail_on"])
def test_config_error_names_the_key_as_the_file_spells_it(key: str, tmp_path: Path, capsys) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"{key}: sometimes\n")
    assert main(["check", _trace(tmp_path), "--config", str(cfg)]) == 2
    assert capsys.readouterr().err == (
        f"perflint: error: {cfg}: line 1: key '{key}': 'sometimes' is not one of: error, warning, info, never\n"
    )


def test_config_errors_in_perflint_words_with_lines(tmp_path: Path, capsys) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("select: [TC]\nfail_onn: error\nsuppress:\n  - rule: TC001\n    reson: x\n")
    assert main(["check", _trace(tmp_path), "--config", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Unexpected keyword" not in err
    assert err.startswith(f"perflint: error: {cfg}: line 2: unknown key 'fail_onn' (did you mean 'fail-on'?)")
    assert "line 4: key 'suppress.0.reason' is required" in err and "line 5: unknown key 'suppress.0.reson'" in err


def test_invalid_yaml_names_its_line(tmp_path: Path, capsys) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("select: [TC]\nignore: [DIM\nfail-on: error\n")
    assert main(["check", _trace(tmp_path), "--config", str(cfg)]) == 2
    assert re.match(rf"perflint: error: {re.escape(str(cfg))}: line \d+: invalid YAML: ", capsys.readouterr().err)


def test_override_of_an_unknown_rule_is_refused(tmp_path: Path, capsys) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("fail-on: error\nrules:\n  NOPE123: {severity: info}\n")
    assert main(["check", _trace(tmp_path), "--config", str(cfg)]) == 2
    assert f"{cfg}: line 3: key 'rules.NOPE123': selector 'NOPE123' matches no rule" in capsys.readouterr().err


def test_at_most_two_info_findings_per_rule_and_trace() -> None:
    from perflint.engine.run import MAX_INFOS, _few_infos
    from perflint.findings import Finding

    def f(code: str, sev: str, impact: float) -> Finding:
        return Finding(code=code, name="x.y", severity=sev, message=f"{code} {impact}", trace="t", rank=None, fingerprint=f"{code}{impact}", impact_us=impact)  # type: ignore[arg-type]

    found = [f("OCC004", "info", i) for i in (5.0, 50.0, 1.0, 20.0)] + [f("OCC004", "warning", 2.0), f("SYNC001", "info", 3.0)]
    kept = _few_infos(found)
    occ_info = [x for x in kept if x.code == "OCC004" and x.severity == "info"]
    assert MAX_INFOS == 2 and [x.impact_us for x in occ_info] == [50.0, 20.0]  # the largest, in report order
    assert occ_info[-1].evidence["more_info_findings"] == 2 and occ_info[-1].message.endswith("(and 2 more like it, left out)")
    assert any(x.severity == "warning" for x in kept) and any(x.code == "SYNC001" for x in kept)  # warnings and other rules stay
