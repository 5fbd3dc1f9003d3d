"""The device peak table's data file (perflint/data/devices.yaml): every number names a document
the file lists, the parts read from it are those the Python table it replaced built, and a
malformed entry is one error naming the file, the line, the entry and the problem."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from perflint.cli import main
from perflint.errors import PerflintError
from perflint.metrics import devices
from perflint.metrics.devices import DEVICES_FILE, DeviceTableError, Part, parts, read_table
from tests.conftest import FIXTURES, ROOT

# Every field of every part as perflint/metrics/devices.py built them in Python before the table
# became a data file (commit b9e865d), dumped with `_fields` below.
BEFORE = Path(__file__).with_name("device_parts_before_data_file.json")

# `source` was one string per part, and four families' strings also named a second document or how
# the figures were derived. That is now written beside each number it concerns; `source` is the
# part's own document.
SOURCE_MOVED_TO_NUMBERS = {
    "v100": "; Volta architecture whitepaper (SMs, boost clock)",
    "a100": "; Ampere GA100 whitepaper (SMs, boost clock)",
    "b200": " (8-GPU figures divided by 8)",
    "gb200": " (superchip figures divided by its 2 GPUs)",
}
NUMBER_FIELDS = ("memory_gb", "sm_count", "cc", "boost_mhz", "bandwidth_gbps")


def _fields(p: Part) -> dict[str, Any]:
    d = dataclasses.asdict(p)
    d["forms"] = sorted(p.forms)
    d["cc"] = list(p.cc) if p.cc else None
    d["link"] = {"kind": p.link.kind, "total_gbps": p.link.total_gbps} if p.link else None
    return d


def _raw() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(DEVICES_FILE.read_text(encoding="utf-8"))
    return data


def test_parts_are_those_the_python_table_built() -> None:
    before = json.loads(BEFORE.read_text())
    now = [_fields(p) for p in parts()]
    assert [p["key"] for p in now] == [p["key"] for p in before]
    raw = {e["key"]: e for e in _raw()["parts"]}
    for old, new in zip(before, now):
        assert set(new) == set(old), old["key"]
        for name in old:
            if name == "source" and new[name] != old[name]:
                moved = SOURCE_MOVED_TO_NUMBERS[old["model"]]
                assert old[name] == new[name] + moved, old["key"]
                continue
            # json.dumps tells 900 from 900.0: the report writes the number as the table types it.
            assert json.dumps(new[name], sort_keys=True) == json.dumps(old[name], sort_keys=True), (old["key"], name)
        # What left the source string is now beside the numbers it concerns.
        entry = raw[old["key"]]
        if old["model"] in ("v100", "a100"):
            assert entry["sm_count"]["source"] == entry["boost_mhz"]["source"] != entry["document"]
        if old["model"] in ("b200", "gb200"):
            assert "divided by" in entry["bandwidth_gbps"]["note"]


def _numbers(node: Any, path: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    """The path of every number (int or float, not bool) under `node`."""
    if isinstance(node, bool):
        return []
    if isinstance(node, (int, float)):
        return [path]
    if isinstance(node, dict):
        return [p for k, v in node.items() for p in _numbers(v, path + (k,))]
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in _numbers(v, path + (i,))]
    return []


def _at(node: Any, path: tuple[Any, ...]) -> Any:
    for k in path:
        node = node[k]
    return node


def test_every_number_names_a_listed_document() -> None:
    raw = _raw()
    docs = raw["sources"]
    assert docs and all(set(d) == {"title", "url"} and d["title"] and d["url"].startswith("https://") for d in docs.values())
    found = _numbers(raw["parts"], ("parts",))
    # The walk sees every number the parts hold (the compute capability is written as text: below).
    held = sum(len(p.peaks) + sum(x is not None for x in (p.memory_gb, p.sm_count, p.boost_mhz, p.bandwidth_gbps, p.link)) for p in parts())
    assert len(found) == held
    used: set[str] = set()
    for path in found:
        holder = _at(raw, path[:-1])
        assert path[-1] == "value" and isinstance(holder, dict), f"{path}: a number without its source"
        assert holder.get("source") in docs, f"{path}: source {holder.get('source')!r} is not listed under sources"
        used.add(holder["source"])
    # Numbers written as text (the compute capability) and every sourced field: a {value, source}.
    for entry in raw["parts"]:
        sourced = [entry[f] for f in NUMBER_FIELDS if f in entry] + list(entry.get("peaks", {}).values())
        sourced += [entry["link"]["total_gbps"]] if "link" in entry else []
        for s in sourced:
            assert isinstance(s, dict) and s["source"] in docs and set(s) <= {"value", "source", "note"}, (entry["key"], s)
            used.add(s["source"])
        assert entry["document"] in docs
        used.add(entry["document"])
    assert used == set(docs), f"documents no number cites: {set(docs) - used}"


def test_derived_numbers_say_how() -> None:
    """A number the document prints otherwise (sparse figures, package and board totals) says how
    it was derived: every halved Tensor Core figure of a part whose document gives only sparse ones."""
    by = {e["key"]: e for e in _raw()["parts"]}
    for key in ("h100-sxm", "h100-pcie", "h100-nvl", "h200-sxm", "h200-nvl", "l4"):
        for k, n in by[key]["peaks"].items():
            if k.endswith("_tc") and k != "fp64_tc":
                assert "half of" in n["note"] and "with sparsity" in n["note"], (key, k)
    for key in ("mi250x-gcd", "mi250-gcd"):
        e = by[key]
        for n in [e["memory_gb"], e["sm_count"], e["bandwidth_gbps"], *e["peaks"].values()]:
            assert n["note"].startswith("half of the package's"), (key, n)


def _broken(tmp_path: Path, old: str, new: str) -> tuple[Path, int]:
    text = DEVICES_FILE.read_text(encoding="utf-8")
    assert text.count(old) >= 1, old
    at = text.index(old)
    path = tmp_path / "devices.yaml"
    path.write_text(text[:at] + new + text[at + len(old) :], encoding="utf-8")
    return path, text[:at].count("\n") + 1


@pytest.mark.parametrize(
    ("old", "new", "entry", "problem"),
    [
        ("fp8_tc: {value: 1979.0, source: h100-ds,", "fp8_tc: {value: 1979.0, source: h100-dss,", "part 'h100-sxm'", "peaks.fp8_tc.source: 'h100-dss' is not one of the documents"),
        ("fp32: {value: 51.0, source: h100-ds}", "fp32: 51.0", "part 'h100-pcie'", "peaks.fp32: a number is written {value: ..., source: <document>}"),
        ("memory_gb: {value: 48, source: l40s-ds}", "memory_gb: 48", "part 'l40s'", "memory_gb: a number is written"),
        ("memory_gb: {value: 48, source: l40s-ds}", "memory_gb: {value: 48}", "part 'l40s'", "memory_gb: Object missing required field `source`"),
        ("tf32_tc: {value: 378.0,", "tf32_tc: {value: '378',", "part 'h100-pcie'", "peaks.tf32_tc.value: Expected `float`, got `str`"),
        ("fp32: {value: 51.0, source: h100-ds}", "fp31: {value: 51.0, source: h100-ds}", "part 'h100-pcie'", "peaks.fp31: unknown peak key"),
        ("    document: l4-ds", "    documnt: l4-ds", "part 'l4'", "documnt: Object contains unknown field"),
        ("document: l4-ds", "document: l5-ds", "part 'l4'", "document: 'l5-ds' is not one of the documents"),
        ('cc: {value: "8.9"', "cc: {value: 8.9", "part 'l4'", "cc.value: Expected `str`"),
        ("sm_count: {value: 104, source: mi210-spec}", "sm_count: {value: 104.5, source: mi210-spec}", "part 'mi210'", "sm_count.value: Expected `int`"),
        ("total_gbps: {value: 64.0, source: a10-ds}", "total_gbps: {value: -64.0, source: a10-ds}", "part 'a10'", "link.total_gbps.value: Expected `float` > 0.0"),
        ("key: v100-pcie-32gb", "key: v100-pcie-16gb", "part 'v100-pcie-16gb'", "key: a second part with this key"),
        ("vendor: amd", "vendor: intel", "part 'mi210'", "vendor: Invalid enum value 'intel'"),
        ("url: https://developer.nvidia.com/cuda-gpus", "url: developer.nvidia.com/cuda-gpus", "", "sources.cuda-cc.url: Expected `str` matching regex '^https://'"),
    ],
)
def test_a_malformed_entry_is_one_error_naming_file_line_and_entry(tmp_path: Path, old: str, new: str, entry: str, problem: str) -> None:
    path, line = _broken(tmp_path, old, new)
    with pytest.raises(DeviceTableError) as err:
        read_table(path)
    msg = err.value.line()
    assert "\n" not in msg and isinstance(err.value, PerflintError)
    assert msg.startswith(f"{path}: line {line}: {entry + ': ' if entry else ''}"), msg
    assert problem in msg, msg


def test_unreadable_or_invalid_yaml_names_the_file(tmp_path: Path) -> None:
    path, line = _broken(tmp_path, "  - key: t4", "  - key: [t4")
    with pytest.raises(DeviceTableError, match=rf"^{path}: line \d+: invalid YAML"):
        read_table(path)
    with pytest.raises(DeviceTableError, match="cannot read the device table"):
        read_table(tmp_path / "missing.yaml")


def test_a_broken_table_fails_the_check_with_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = _broken(tmp_path, "source: h100-ds}", "source: nowhere}")
    monkeypatch.setattr(devices, "DEVICES_FILE", path)
    devices._table.cache_clear()
    try:
        rc = main(["check", str(FIXTURES / "gpu" / "clean_bf16.pt.trace.json.gz"), "--jobs", "1", "--fail-on", "never"])
    finally:
        devices._table.cache_clear()
    assert rc == 2
    assert f"{path}: line " in capsys.readouterr().err


def test_the_docs_example_entry_is_valid(tmp_path: Path) -> None:
    """docs/roofline.md's example of a new entry reads, with the file's sources, as a part."""
    doc = (ROOT / "docs" / "roofline.md").read_text(encoding="utf-8")
    example = re.search(r"### Adding a device.*?```yaml\n(.*?)```", doc, re.S)
    assert example is not None
    sources = DEVICES_FILE.read_text(encoding="utf-8").split("\nparts:\n")[0]
    path = tmp_path / "devices.yaml"
    path.write_text(f"{sources}\nparts:\n{example.group(1)}", encoding="utf-8")
    (part,) = read_table(path)
    assert part.sm_count == 114 and part.peak("fp16", True) == 756.5 and part.source == "NVIDIA H100 Tensor Core GPU datasheet"


def _gbps(figure: str) -> float:
    value, unit = figure.split()
    return float(value) * {"GB/s": 1, "TB/s": 1000}[unit]


def test_the_communication_docs_list_every_link() -> None:
    """docs/communication.md's link table: one row per link kind and figure, naming every part
    that has it, with the one-direction peak."""
    doc = (ROOT / "docs" / "communication.md").read_text(encoding="utf-8")
    table = doc[doc.index("| part | link |") :].split("\n\n")[0].splitlines()[2:]
    rows = [[c.strip() for c in r.strip().strip("|").split("|")] for r in table]
    links = {(p.link.kind, p.link.total_gbps): p.link.gbps for p in parts() if p.link}
    assert {(r[1], _gbps(r[2])) for r in rows} == set(links)
    for r in rows:
        assert float(r[3]) == links[(r[1], _gbps(r[2]))], r
    for p in parts():
        if p.link:
            named = [r for r in rows if (r[1], _gbps(r[2])) == (p.link.kind, p.link.total_gbps) and re.search(rf"\b{p.model}\b", r[0], re.I)]
            assert named, f"{p.key}: no row names it with its {p.link.kind} link"
