"""The device peak table: every device name the corpus and fixtures record matches the part it is
(or no part, with the reason), variants are told apart by memory and SM count, and an unknown or
ambiguous device never gets peaks."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

from perflint.graph.load import load_traces
from perflint.metrics.devices import MATRIX_KEYS, VECTOR_KEYS, device_part, match_device, parts
from tests.conftest import FIXTURES, ROOT, shared_trace

# Every device name in ../shared/traces and fixtures/: the part it is, or None (not in the table).
CORPUS = {
    "NVIDIA H100 80GB HBM3": "h100-sxm",
    "NVIDIA A100-SXM4-80GB": "a100-sxm-80gb",
    # A board part number instead of a form factor: 108 SMs and 39.4 GiB leave the A100 40GB SXM
    "NVIDIA A100-PG509-200": "a100-sxm-40gb",
    "Tesla V100-SXM2-32GB": "v100-sxm2-32gb",
    "Tesla V100-SXM2-16GB": "v100-sxm2-16gb",
    "Tesla V100-DGXS-32GB": "v100-sxm2-32gb",
    "AMD Instinct MI210": "mi210",
    "AMD Instinct MI300X": "mi300x",
    "AMD Instinct MI300X VF": "mi300x",
    "NVIDIA GeForce RTX 2080 Ti": None,
    "AMD Radeon Graphics": None,  # an MI250 GCD that ROCm 6.2 did not name
    "": None,
}
_PROPS = re.compile(rb'"deviceProperties"\s*:\s*\[(.*?)\]', re.S)
_NAME = re.compile(rb'"name"\s*:\s*"([^"]*)"')


def _json_names(root: Path) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for p in sorted(root.rglob("*.json*")):
        opener = gzip.open if p.suffix == ".gz" else open
        with opener(p, "rb") as fh:
            m = _PROPS.search(fh.read())
        for n in _NAME.findall(m.group(1)) if m else []:
            out.setdefault(n.decode(), p)
    return out


def _corpus_devices(traces: Path) -> dict[str, tuple[int | None, int | None]]:
    """Device name -> (memory, SM count) as perflint's readers give them, over every trace whose
    device properties name one."""
    files = set(_json_names(traces).values()) | set(_json_names(FIXTURES).values()) | set(traces.rglob("*.sql*"))
    found: dict[str, tuple[int | None, int | None]] = {}
    for path in sorted(files):
        for t in load_traces(str(path)):
            for d in t.devices.values():
                found.setdefault(d.name, (d.total_memory, d.sm_count))
                assert device_part(d).part is None or device_part(d).part.key == CORPUS.get(d.name), d
    return found


def test_every_corpus_device_name_is_known(traces_dir: Path) -> None:
    found = _corpus_devices(traces_dir)
    assert set(found) == set(CORPUS), "new device names in the corpus: add them to CORPUS with the part they are"
    for name, (mem, sms) in found.items():
        m = match_device(name, mem, sms)
        assert (m.part.key if m.part else None) == CORPUS[name], (name, m.reason)
        assert m.reason


def test_real_database_devices() -> None:
    (t,) = load_traces(shared_trace("pyprof/lm_da6bcc3/net.sql"))
    m = device_part(t.primary_device)
    assert m.part is not None and m.part.key == "v100-sxm2-16gb"
    assert m.part.peak("fp16", True) == 125.0 and m.part.bandwidth_gbps == 900.0


@pytest.mark.parametrize(
    ("name", "mem_gib", "sms", "cc", "key"),
    [
        ("NVIDIA A100-PCIE-40GB", 39.4, 108, (8, 0), "a100-pcie-40gb"),
        ("NVIDIA A100 80GB PCIe", 79.2, 108, (8, 0), "a100-pcie-80gb"),
        ("NVIDIA A100-SXM4-40GB", 39.4, 108, (8, 0), "a100-sxm-40gb"),
        ("Tesla V100-PCIE-16GB", 15.8, 80, (7, 0), "v100-pcie-16gb"),
        ("Tesla T4", 14.7, 40, (7, 5), "t4"),
        ("NVIDIA A10", 22.1, 72, (8, 6), "a10"),
        ("NVIDIA L4", 22.0, 58, (8, 9), "l4"),
        ("NVIDIA L40S", 44.4, 142, (8, 9), "l40s"),
        ("NVIDIA H100 PCIe", 79.2, 114, (9, 0), "h100-pcie"),
        ("NVIDIA H100 NVL", 93.6, 132, (9, 0), "h100-nvl"),
        ("NVIDIA H200", 139.8, 132, (9, 0), "h200-sxm"),
        ("NVIDIA H200 NVL", 139.8, 132, (9, 0), "h200-nvl"),
        ("NVIDIA B200", 178.4, 148, (10, 0), "b200"),
        ("NVIDIA GB200", 184.0, 152, (10, 0), "gb200"),
        ("AMD Instinct MI250X", 64.0, 110, None, "mi250x-gcd"),
        ("AMD Instinct MI250X / MI250", 64.0, 110, None, "mi250x-gcd"),
        ("AMD Instinct MI250X / MI250", 64.0, 104, None, "mi250-gcd"),
        ("AMD Instinct MI325X", 256.0, 304, None, "mi325x"),
    ],
)
def test_synthetic_names(name: str, mem_gib: float, sms: int, cc: tuple[int, int] | None, key: str) -> None:
    m = match_device(name, int(mem_gib * 2**30), sms, cc)
    assert m.part is not None and m.part.key == key, m.reason


@pytest.mark.parametrize(
    ("name", "mem_gib", "sms", "why"),
    [
        ("NVIDIA A10G", 22.0, 80, "not in the device peak table"),  # A10G is not the A10
        ("NVIDIA L40", 44.4, 142, "not in the device peak table"),
        ("Tesla V100S-PCIE-32GB", 31.7, 80, "not in the device peak table"),
        ("NVIDIA A100X", 79.2, 108, "not in the device peak table"),
        ("Tesla V100", 31.7, 80, "names no form factor"),  # PCIe and SXM2 differ
        ("AMD Instinct MI250X / MI250", 64.0, None, "ambiguous"),
        ("NVIDIA H100 PCIe", 93.6, 114, "matches no part's memory"),
        ("NVIDIA H100 80GB HBM3", 79.2, 114, "matches no part"),  # SXM has 132 SMs
        ("NVIDIA A100-SXM4-80GB", 39.4, 108, "matches no part's memory"),
    ],
)
def test_unknown_or_ambiguous_devices_get_no_peaks(name: str, mem_gib: float, sms: int | None, why: str) -> None:
    m = match_device(name, int(mem_gib * 2**30), sms)
    assert m.part is None and why in m.reason


def test_variants_differ_only_where_the_datasheets_do() -> None:
    by = {p.key: p for p in parts()}
    assert by["a100-sxm-80gb"].bandwidth_gbps == 2039.0 and by["a100-pcie-80gb"].bandwidth_gbps == 1935.0
    assert by["a100-sxm-40gb"].peaks == by["a100-pcie-40gb"].peaks
    assert by["h100-sxm"].peak("bf16", True) == 989.5 and by["h100-pcie"].peak("bf16", True) == 756.5
    assert by["h200-sxm"].peaks == by["h100-sxm"].peaks and by["h200-sxm"].bandwidth_gbps == 4800.0
    # One MI250X GCD is half the package.
    assert by["mi250x-gcd"].peak("bf16", True) == 191.5


def test_peak_lookup_by_dtype_and_units() -> None:
    h100 = {p.key: p for p in parts()}["h100-sxm"]
    assert h100.peak("fp32", False) == 67.0
    assert h100.peak("tf32", True) == 494.5 and h100.peak("fp32", True) == 494.5
    assert h100.peak("fp64", True) == 67.0 and h100.peak("fp64", False) == 34.0
    assert h100.peak("fp16", False) is None  # not in the datasheet: no guess
    assert h100.peak(None, True) is None
    mi300 = {p.key: p for p in parts()}["mi300x"]
    assert mi300.peak("fp32", True) == 163.4 and mi300.peak("fp8", True) == 2614.9


def test_every_part_cites_its_source() -> None:
    keys = [p.key for p in parts()]
    assert len(keys) == len(set(keys))
    for p in parts():
        assert p.source and p.url.startswith("https://") and p.bandwidth_gbps
        assert set(p.peaks) <= set(VECTOR_KEYS + MATRIX_KEYS), p.key
        assert all(v > 0 for v in p.peaks.values())


def _cell(x: float | None) -> str:
    return "" if x is None else f"{x:g}"


def test_docs_list_every_part_with_its_numbers() -> None:
    """docs/roofline.md's table is the data file's: one row per part, every cell its number."""
    doc = (ROOT / "docs" / "roofline.md").read_text()
    rows = [line for line in doc.splitlines() if line.startswith("| [")]
    assert len(rows) == len(parts())
    for p, row in zip(parts(), rows):
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        want = [f"[{p.part}]({p.url})", f"`{p.key}`", _cell(p.memory_gb), _cell(p.sm_count), _cell(p.boost_mhz), _cell(p.bandwidth_gbps)]
        want += [_cell(p.peaks.get(k)) for k in VECTOR_KEYS + MATRIX_KEYS]
        assert cells == want, p.key
