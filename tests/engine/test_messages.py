"""Finding messages a person reads, findings grouped per root cause, severity caps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from perflint.cli import main
from perflint.engine.message import MAX_CHARS, MAX_VALUE_CHARS, fmt_duration, fmt_size, placeholders, render
from tests.builder import TraceBuilder

# --- rendering ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("us", "text"),
    [(0.4, "0.4 µs"), (12.34, "12.3 µs"), (432.0, "432 µs"), (1500.0, "1.5 ms"), (79100.0, "79.1 ms"),
     (250_000.0, "250 ms"), (13_336_316.0, "13.34 s")],
)  # fmt: skip
def test_durations_take_the_unit_their_magnitude_needs(us: float, text: str) -> None:
    assert fmt_duration(us) == text
    assert render("{x:dur}", {"x": us}) == text


@pytest.mark.parametrize(
    ("n", "text"), [(704, "704 B"), (65536, "65.5 KB"), (62_914_560, "62.9 MB"), (18_569_605_936, "18.6 GB")]
)
def test_sizes_take_the_unit_their_magnitude_needs(n: int, text: str) -> None:
    assert fmt_size(n) == text


def test_a_missing_value_takes_its_leading_words_with_it() -> None:
    tpl = "{count} {kind} host syncs from {op} at {source} blocked the CPU for {us:dur}"
    env = {"count": 5, "kind": "cudaDeviceSynchronize", "op": None, "source": None, "us": 938.0}
    assert render(tpl, env) == "5 cudaDeviceSynchronize host syncs blocked the CPU for 938 µs"
    env.update(op="aten::copy_", source="train.py:44")
    assert render(tpl, env) == "5 cudaDeviceSynchronize host syncs from aten::copy_ at train.py:44 blocked the CPU for 938 µs"


@pytest.mark.parametrize("missing", [None, float("nan"), [], {}])
def test_an_optional_clause_goes_when_a_value_in_it_is_missing(missing: object) -> None:
    tpl = "blocked {us:dur}[[ ({share:.1f}% of step time)]]; fix it"
    assert render(tpl, {"us": 10.0, "share": missing}) == "blocked 10.0 µs; fix it"
    assert render(tpl, {"us": 10.0, "share": 2.25}) == "blocked 10.0 µs (2.2% of step time); fix it"


def test_no_placeholder_text_ever() -> None:
    tpl = "{a} from {b} with input dims {c}[[ (theoretical {d}%; held down by {e})]] top {f[x]}"
    msg = render(tpl, {"a": "x", "b": None, "c": None, "d": None, "e": "regs", "f": {}})
    for bad in ("n/a", "None", "nan", "{"):
        assert bad not in msg
    assert msg == "x top"


def test_messages_are_cut_and_long_values_shortened() -> None:
    msg = render("{a} and {b}", {"a": "x" * 500, "b": "y" * 500})
    assert len(msg) <= MAX_CHARS
    assert msg.count("x") < 130


def test_shapes_print_without_trailing_empty_entries() -> None:
    dims = [[32, 256, 14, 14], [1024, 256, 1, 1], [], [], [], [], [], [], []]
    assert render("{d} on x", {"d": dims}) == "[[32, 256, 14, 14], [1024, 256, 1, 1]] on x"
    assert render("{d}", {"d": [[], [4, 8], []]}) == "[[], [4, 8]]"  # a leading scalar keeps its place
    assert render("{d}", {"d": [1, 2, []]}) == "[1, 2, []]"  # not a shape list


def test_long_lists_drop_whole_items_never_a_cut_word() -> None:
    names = [f"kernel_number_{i:02d}" for i in range(40)]
    text = render("kernels: {k:list}", {"k": names})
    assert text.startswith("kernels: kernel_number_00, kernel_number_01")
    kept = text[len("kernels: ") :].split(" and ")[0].split(", ")
    assert all(k in names for k in kept)  # every shown item whole
    assert text.endswith(f" and {40 - len(kept)} more") and len(text) - len("kernels: ") <= MAX_VALUE_CHARS
    assert render("{k:list}", {"k": ["a", "b"]}) == "a, b"
    # A fix is never shortened.
    assert render("{k:list}", {"k": names}, limit=None) == ", ".join(names)


def test_code_in_messages_and_fixes_is_kept_exactly() -> None:
    for code in ("loss.item()", "no_sync()", "torch.backends.cuda.matmul.allow_tf32 = True", "t.to(device, non_blocking=True)"):
        assert code in render(f"call {code} once[[ at {{x}}]].", {"x": None}), code
        assert code in render(f"(with {code})", {}, limit=None), code


def test_placeholders_are_the_names_templates_use() -> None:
    assert placeholders("{a:.1f} [[from {b}]] {top[op]} {c.d}") == {"a", "b", "top", "c"}
    with pytest.raises(ValueError):
        placeholders("{} x")


# --- validation -----------------------------------------------------------------------------

RULE = {
    "code": "XM001",
    "name": "custom.messages",
    "severity": "warning",
    "summary": "s",
    "rationale": "r",
    "scope": "kernel_groups",
    "where": "true",
    "measure": ["kernel", "time_us"],
    "assert": "false",
    "message": "{kernel:kernel} took {time_us:dur}",
    "impact": "time_us",
    "fix": "f",
}


def _rule_dir(tmp_path: Path, **changes: object) -> Path:
    d = tmp_path / "rules"
    d.mkdir(exist_ok=True)
    (d / "XM001.yaml").write_text(yaml.safe_dump({**RULE, **changes}))
    return d


def test_validate_refuses_a_placeholder_that_names_no_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _rule_dir(tmp_path, message="{kernel} took {kernel_time_typo:dur}")
    assert main(["rules", "validate", str(d / "XM001.yaml")]) == 2
    err = capsys.readouterr().err
    assert "XM001.yaml" in err and "{kernel_time_typo}" in err


def test_validate_refuses_it_in_the_fix_and_in_optional_clauses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _rule_dir(tmp_path, message="{kernel}[[ from {opp}]]")
    assert main(["rules", "validate", str(d / "XM001.yaml")]) == 2
    assert "{opp}" in capsys.readouterr().err
    d = _rule_dir(tmp_path, fix="raise {threshold_x}")
    assert main(["rules", "validate", str(d / "XM001.yaml")]) == 2
    assert "{threshold_x}" in capsys.readouterr().err


def test_a_check_with_such_a_rule_dir_stops_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _rule_dir(tmp_path, message="{nope}")
    b = TraceBuilder()
    b.kernel("k", 0, 10)
    path = b.write(tmp_path / "t.json")
    assert main(["check", path, "--rule-dir", str(d), "--select", "XM001"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"perflint: error: {d / 'XM001.yaml'}: key 'message': unknown placeholder {{nope}} "
        "(not a field of scope 'kernel_groups', a param, nor one of impact_us, items, others, skipped_by, top)"
    ]


@pytest.mark.parametrize(
    ("changes", "key", "bad"),
    [
        ({"message": "{kernel} from {top[opp]}"}, "message", "{top[opp]}"),
        ({"fix": "see {top.nope}"}, "fix", "{top.nope}"),
        ({"message": "{kernel:kernel} in {count} launches, {time_us:dur}, {items} rows, {top[op]}"}, None, None),
        ({"message": "{kernel} above {limit:.1f}", "params": {"limit": {"type": "float", "default": 1, "description": "d"}}}, None, None),
    ],
)
def test_placeholders_name_fields_params_or_engine_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], changes: dict[str, object], key: str | None, bad: str | None
) -> None:
    """A field of the scope, a param, or a name the engine adds (top's own keys are the scope's fields)."""
    d = _rule_dir(tmp_path, **changes)
    rc = main(["rules", "validate", str(d / "XM001.yaml")])
    err = capsys.readouterr().err.splitlines()
    if bad is None:
        assert rc == 0 and len(err) == 1 and err[0].endswith("1 rule file valid"), err
        return
    assert rc == 2 and len(err) == 1, err
    assert err[0].startswith(f"perflint: error: {d / 'XM001.yaml'}: key '{key}': unknown placeholder {bad} "), err


# --- grouping, repeats, caps ----------------------------------------------------------------


def _many_kernels(tmp_path: Path, n: int) -> str:
    b = TraceBuilder()
    t = 0.0
    for i in range(n):
        b.op(f"aten::op{i}", t, 5)
        b.kernel(f"kernel_{i}", t + 10, 100.0 + i, launch_ts=t + 1)
        t += 200
    return b.write(tmp_path / "t.json")


def _run(tmp_path: Path, capsys: pytest.CaptureFixture[str], path: str, **changes: object) -> list[dict]:
    d = _rule_dir(tmp_path, **changes)
    rc = main(["check", path, "--rule-dir", str(d), "--select", "XM001", "--format", "json", "--fail-on", "never"])
    out = capsys.readouterr().out
    assert rc == 0, out
    return [f for t in json.loads(out)["traces"] for f in t["findings"]]


def test_at_most_ten_findings_per_rule_and_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    found = _run(tmp_path, capsys, _many_kernels(tmp_path, 14))
    assert len(found) == 10
    assert [f["impact_us"] for f in found] == sorted((f["impact_us"] for f in found), reverse=True)
    assert found[-1]["evidence"]["more_findings"] == 4


def test_a_group_is_one_finding_with_summed_fields_and_its_top_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _many_kernels(tmp_path, 14)
    found = _run(
        tmp_path, capsys, path,
        group={"by": ["category"], "sum": ["time_us", "count"], "top": 3},
        message="{items} kernels took {time_us:.0f} us in {count} launches; top {top[kernel]}",
    )  # fmt: skip
    assert len(found) == 1
    (f,) = found
    total = sum(100.0 + i for i in range(14))
    assert f["message"] == f"14 kernels took {total:.0f} us in 14 launches; top kernel_13"
    assert f["impact_us"] == pytest.approx(total)
    assert [r["kernel"] for r in f["evidence"]["top_items"]] == ["kernel_13", "kernel_12", "kernel_11"]
    assert f["evidence"]["items"] == 14


def test_the_same_message_twice_is_one_finding(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    found = _run(tmp_path, capsys, _many_kernels(tmp_path, 3), message="a kernel ran long")
    assert len(found) == 1
    assert found[0]["evidence"]["repeats"] == 3
    assert found[0]["impact_us"] == pytest.approx(100.0 + 101.0 + 102.0)


def test_a_cap_lowers_the_severity_where_its_condition_holds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _many_kernels(tmp_path, 2)
    found = _run(tmp_path, capsys, path, severity="error", at_most=[{"when": "time_us < 100.5", "severity": "info"}])
    assert {f["kernel"]: f["severity"] for f in found} == {"kernel_0": "info", "kernel_1": "error"}


def test_no_impact_exceeds_the_analysed_window(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An estimate above the window the trace covers is cut to it, and the evidence says how it
    was computed and what it was before the cut."""
    path = _many_kernels(tmp_path, 3)  # kernels from 10 us to 512 us: the window is ~502 us
    found = _run(tmp_path, capsys, path, impact="time_us * 1000")
    window = max(f["impact_us"] for f in found)
    assert window < 600
    for f in found:
        assert f["evidence"]["impact_basis"] == "time_us * 1000"
        assert f["evidence"]["impact_uncapped_us"] > f["impact_us"] == window


def test_code_in_a_fix_keeps_its_dots_and_parentheses_and_a_fix_is_never_cut() -> None:
    fix = "accumulate as tensors and call `.item()` / `.cpu()` once per N steps, or `torch.compile()` it. " * 8
    out = render(fix, {}, limit=None)
    assert "call `.item()` / `.cpu()` once" in out and "`torch.compile()` it." in out
    assert len(out) > MAX_CHARS and not out.endswith("…")
    # An optional clause that came out empty still leaves no "()" or " ," behind.
    assert render("took {a} ({b}) , then", {"a": 2}) == "took 2, then"


def test_a_fix_keeps_its_values_whole_where_a_message_cuts_them() -> None:
    """A fix's values are advice (a hint computed per device, a list of ops): cut, they would
    leave broken code in it; a message still cuts a long value."""
    hint = "enable TF32 for matmuls (torch.set_float32_matmul_precision('high') or torch.backends.cuda.matmul.allow_tf32 = True) or run in bf16"
    assert len(hint) > MAX_VALUE_CHARS
    assert render("{hint}. Then profile again.", {"hint": hint}, limit=None) == f"{hint}. Then profile again."
    assert "…" in render("{hint}.", {"hint": hint})


def test_a_cut_falls_between_words() -> None:
    value = "aten::addmm on sm80_xmma_gemm_f32f32 " * 10
    out = render("ran {v} there", {"v": value})
    cut = out[len("ran ") : out.index(" there")]
    assert cut.endswith(" …") and len(cut) <= MAX_VALUE_CHARS
    assert value.startswith(cut[:-2]) and value[len(cut) - 2] == " "  # the last word kept is whole
