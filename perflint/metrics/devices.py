"""Device peaks: dense (non-sparse) math throughput per dtype, memory bandwidth, SM/CU count,
boost clock and GPU-to-GPU link of the data-centre GPUs traces come from, and the matching of a
trace's device (name, memory, SM count, compute capability) to one part.

The table is data: perflint/data/devices.yaml holds one entry per part, every number with the
document it comes from (and how it was derived, where the document does not print it as it
stands). This module reads the file once, on first use, checks it (one error naming the file, the
line, the entry and the problem), and gives each entry as a `Part`. Units and keys are the file's
(its header says them): TFLOP/s, GB/s, GB, MHz; `fp64`, `fp32`, `fp16` are vector rates, `*_tc`
matrix rates. A number the documents do not give is absent, never filled in.

Matching (`match_device`) never guesses: an unknown name, or a name whose candidate parts differ
in their peaks and which memory, SM count and compute capability do not tell apart, gives no
peaks and the reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from perflint.errors import PerflintError
from perflint.model import Device
from perflint.yaml_lines import yaml_line

VECTOR_KEYS = ("fp64", "fp32", "fp16")
MATRIX_KEYS = ("fp64_tc", "fp32_tc", "tf32_tc", "fp16_tc", "bf16_tc", "fp8_tc", "int8_tc")
DEVICES_FILE = Path(__file__).resolve().parent.parent / "data" / "devices.yaml"


@dataclass(frozen=True)
class Link:
    """A part's GPU-to-GPU link as its vendor document gives it: `total_gbps` is the document's
    figure, both directions together (NVLink's 900 GB/s on an H100 SXM is 450 GB/s each way)."""

    kind: str  # "NVLink", "PCIe Gen4 x16"
    total_gbps: float

    @property
    def gbps(self) -> float:
        """The peak in one direction: what nccl-tests' bus bandwidth (one direction) compares to."""
        return self.total_gbps / 2


@dataclass(frozen=True)
class Part:
    key: str
    part: str  # the part as the vendor names it
    vendor: str  # nvidia | amd
    model: str  # the model token a device name carries, lower case ("a100", "mi300x")
    forms: frozenset[str]  # form-factor tokens that name this part ("pcie", "sxm4", ...)
    bare: bool  # the part a name without a form-factor token means
    memory_gb: int | None  # None: revisions differ, memory does not tell variants apart
    sm_count: int | None  # SMs (NVIDIA) / CUs (AMD) as the device reports them
    cc: tuple[int, int] | None  # NVIDIA compute capability
    boost_mhz: int | None
    bandwidth_gbps: float | None
    peaks: dict[str, float]  # dense TFLOP/s by key (VECTOR_KEYS, MATRIX_KEYS)
    source: str  # the part's own document (its title), cited beside its peaks and link
    url: str
    notes: str = ""
    # The link between GPUs where the part fixes it: SXM parts sit on a baseboard that always
    # connects them by NVLink; PCIe-only parts have no other. None where it depends on the system
    # (an optional NVLink bridge) or the document gives no figure.
    link: Link | None = None

    def peak(self, dtype: str | None, tensor_cores: bool | None) -> float | None:
        """Dense TFLOP/s for math in `dtype`, on the matrix units when `tensor_cores`, else on
        the vector units; None when the table has no such number."""
        if not dtype:
            return None
        if tensor_cores:
            if dtype == "fp32":  # fp32 on matrix units: AMD's fp32 matrix rate, NVIDIA's TF32
                return self.peaks.get("fp32_tc") or self.peaks.get("tf32_tc")
            return self.peaks.get(f"{dtype}_tc")
        return self.peaks.get("fp32" if dtype == "tf32" else dtype)


class DeviceTableError(PerflintError):
    """The device table file is invalid: the line names the file, the entry and the problem."""


# The file's format. msgspec rather than pydantic: the table is read in every process that
# matches a device (each --jobs worker), and importing pydantic costs more than the whole read.
class _Document(msgspec.Struct, forbid_unknown_fields=True):
    title: str
    url: Annotated[str, msgspec.Meta(pattern=r"^https://")]


class _Number(msgspec.Struct, forbid_unknown_fields=True):
    value: Annotated[float, msgspec.Meta(gt=0)]
    source: str
    note: str = ""  # how the number was derived from the document, where it was


class _Count(msgspec.Struct, forbid_unknown_fields=True):
    value: Annotated[int, msgspec.Meta(gt=0)]
    source: str
    note: str = ""


class _CC(msgspec.Struct, forbid_unknown_fields=True):
    value: Annotated[str, msgspec.Meta(pattern=r"^[0-9]+\.[0-9]+$")]  # text ("9.0"): as a number, minor 1 and 10 would be one
    source: str
    note: str = ""


class _Link(msgspec.Struct, forbid_unknown_fields=True):
    kind: str
    total_gbps: _Number


class _Entry(msgspec.Struct, forbid_unknown_fields=True):
    key: str
    part: str
    vendor: Literal["nvidia", "amd"]
    model: Annotated[str, msgspec.Meta(pattern=r"^[a-z0-9]+$")]
    forms: list[Annotated[str, msgspec.Meta(pattern=r"^[a-z0-9]+$")]]
    bare: bool
    document: str
    bandwidth_gbps: _Number
    peaks: dict[str, Any]  # each checked on its own, so that a problem names its key
    memory_gb: _Count | None = None
    sm_count: _Count | None = None
    cc: _CC | None = None
    boost_mhz: _Count | None = None
    link: _Link | None = None
    notes: str = ""


class _File(msgspec.Struct, forbid_unknown_fields=True):
    sources: dict[str, Any]
    parts: list[Any]


_AT = re.compile(r" - at `\$(.*)`$")
_UNKNOWN = re.compile(r"^Object contains unknown field `([^`]*)`")
_BARE = re.compile(r"^Expected `object(?: \| null)?`, got `(int|float|str)`")
_NUMBER_FIELDS = ("memory_gb", "sm_count", "cc", "boost_mhz", "bandwidth_gbps")  # an entry's, beside its peaks and link


def _is_number(tail: list[str | int]) -> bool:
    """Whether the key at the end of a location holds a number (a peak, or a numeric field)."""
    return bool(tail) and (tail[-1] in _NUMBER_FIELDS + ("total_gbps",) or (len(tail) == 2 and tail[0] == "peaks"))


class _Problem(Exception):
    def __init__(self, loc: list[str | int], why: str) -> None:
        super().__init__(why)
        self.loc = loc
        self.why = why


def _convert(value: Any, kind: type[Any], loc: list[str | int]) -> Any:
    try:
        return msgspec.convert(value, kind)
    except msgspec.ValidationError as exc:
        text = str(exc)
        m = _AT.search(text)
        sub: list[str | int] = [int(i) if i else k for k, i in re.findall(r"\.(\w+)|\[(\d+)\]", m.group(1))] if m else []
        why = text[: m.start()] if m else text
        if (u := _UNKNOWN.match(why)) is not None:
            sub.append(u.group(1))
        elif _BARE.match(why) and _is_number((loc + sub)[-2:]):
            why = "a number is written {value: ..., source: <document>}: every number names the document it comes from"
        raise _Problem(loc + sub, why) from None


def _source(n: _Number | _Count | _CC, docs: dict[str, _Document], loc: list[str | int]) -> None:
    if n.source not in docs:
        raise _Problem(loc + ["source"], f"'{n.source}' is not one of the documents under sources")


def _part(entry: _Entry, docs: dict[str, _Document], loc: list[str | int]) -> Part:
    if entry.document not in docs:
        raise _Problem(loc + ["document"], f"'{entry.document}' is not one of the documents under sources")
    for name in _NUMBER_FIELDS:
        if (n := getattr(entry, name)) is not None:
            _source(n, docs, loc + [name])
    if entry.link is not None:
        _source(entry.link.total_gbps, docs, loc + ["link", "total_gbps"])
    peaks: dict[str, float] = {}
    for k, raw in entry.peaks.items():
        if k not in VECTOR_KEYS + MATRIX_KEYS:
            raise _Problem(loc + ["peaks", k], f"unknown peak key (one of {', '.join(VECTOR_KEYS + MATRIX_KEYS)})")
        n = _convert(raw, _Number, loc + ["peaks", k])
        _source(n, docs, loc + ["peaks", k])
        peaks[k] = n.value
    doc = docs[entry.document]
    major, minor = entry.cc.value.split(".") if entry.cc else ("", "")
    return Part(
        key=entry.key, part=entry.part, vendor=entry.vendor, model=entry.model, forms=frozenset(entry.forms), bare=entry.bare,
        memory_gb=entry.memory_gb.value if entry.memory_gb else None, sm_count=entry.sm_count.value if entry.sm_count else None,
        cc=(int(major), int(minor)) if entry.cc else None, boost_mhz=entry.boost_mhz.value if entry.boost_mhz else None,
        bandwidth_gbps=entry.bandwidth_gbps.value, peaks=peaks, source=doc.title, url=doc.url, notes=entry.notes,
        link=Link(entry.link.kind, entry.link.total_gbps.value) if entry.link else None,
    )  # fmt: skip


def read_table(path: Path) -> tuple[Part, ...]:
    """The parts of a device table file, or DeviceTableError naming the file, line, entry and problem."""
    import yaml

    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except OSError as exc:
        raise DeviceTableError(str(path), f"cannot read the device table: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        raise DeviceTableError(str(path), f"{where}invalid YAML: {getattr(exc, 'problem', exc)}") from None
    entry = ""
    try:
        table = _convert(data, _File, [])
        docs = {k: _convert(v, _Document, ["sources", k]) for k, v in table.sources.items()}
        out: list[Part] = []
        for i, raw in enumerate(table.parts):
            key = raw.get("key") if isinstance(raw, dict) else None
            entry = f"part '{key}'" if isinstance(key, str) else f"part #{i + 1}"
            if any(p.key == key for p in out):
                raise _Problem(["parts", i, "key"], "a second part with this key")
            out.append(_part(_convert(raw, _Entry, ["parts", i]), docs, ["parts", i]))
    except _Problem as p:
        line = yaml_line(path, p.loc)
        where = f"line {line}: " if line else ""
        what = f"{entry}: " if p.loc[:1] == ["parts"] and entry else ""
        inner = ".".join(str(x) for x in (p.loc[2:] if p.loc[:1] == ["parts"] else p.loc))
        raise DeviceTableError(str(path), f"{where}{what}{inner + ': ' if inner else ''}{p.why}") from None
    return tuple(out)


@dataclass(frozen=True)
class _Table:
    parts: tuple[Part, ...]
    models: frozenset[str]
    form_tokens: frozenset[str]


@cache
def _table() -> _Table:
    ps = read_table(DEVICES_FILE)
    return _Table(ps, frozenset(p.model for p in ps), frozenset(f for p in ps for f in p.forms) | {"oam"})


def parts() -> tuple[Part, ...]:
    """Every part of the device table (perflint/data/devices.yaml), read once."""
    return _table().parts


_PREFIXES = re.compile(r"^(?:nvidia|tesla|amd|instinct|radeon|geforce)\s+")
_MEM = re.compile(r"(\d+)gb")
# GiB a device reports over the GB in its part's name: totalGlobalMem is a little under the
# nominal size read as GiB (ECC and driver reservations; an 80GB A100 reports 79.15 GiB).
_MEM_RATIO = (0.90, 1.02)


@dataclass(frozen=True)
class Match:
    part: Part | None
    reason: str  # why there is no part, or how the part was chosen
    candidates: tuple[str, ...] = field(default_factory=tuple)


def _tokens(name: str) -> list[str]:
    s = name.strip().lower()
    while True:
        t = _PREFIXES.sub("", s)
        if t == s:
            break
        s = t
    return [t for t in re.split(r"[\s\-_/,()]+", s) if t]


def _same_peaks(parts: list[Part]) -> bool:
    first = parts[0]
    return all(p.peaks == first.peaks and p.bandwidth_gbps == first.bandwidth_gbps and p.link == first.link for p in parts[1:])


def match_device(name: str, total_memory: int | None = None, sm_count: int | None = None, cc: tuple[int, int] | None = None) -> Match:
    """The part a device is, from its name, memory (bytes), SM/CU count and compute capability."""
    if not name.strip():
        return Match(None, "the trace does not name the device")
    table = _table()
    toks = _tokens(name)
    models = [t for t in toks if t in table.models]
    if not models:
        return Match(None, f"'{name}' is not in the device peak table")
    forms = {t for t in toks if t in table.form_tokens} - {"oam"}
    mems = {int(m.group(1)) for t in toks if (m := _MEM.fullmatch(t))}
    cands = [p for p in table.parts if p.model in models]
    if forms:
        cands = [p for p in cands if forms & p.forms]
    else:
        cands = [p for p in cands if p.bare]
    if mems:
        cands = [p for p in cands if p.memory_gb is None or p.memory_gb in mems]
    if not cands:
        return Match(None, f"'{name}' names no form factor or memory size of a part in the device peak table")
    why: list[str] = []
    if total_memory:
        gib = total_memory / 2**30
        kept = [p for p in cands if p.memory_gb is None or _MEM_RATIO[0] <= gib / p.memory_gb <= _MEM_RATIO[1]]
        if not kept:
            return Match(None, f"'{name}' with {gib:.1f} GiB matches no part's memory", tuple(p.key for p in cands))
        if len(kept) < len(cands):
            why.append(f"{gib:.1f} GiB")
        cands = kept
    if sm_count:
        kept = [p for p in cands if p.sm_count is None or p.sm_count == sm_count]
        if not kept:
            return Match(None, f"'{name}' with {sm_count} SMs/CUs matches no part", tuple(p.key for p in cands))
        if len(kept) < len(cands):
            why.append(f"{sm_count} SMs/CUs")
        cands = kept
    if cc:
        kept = [p for p in cands if p.cc is None or p.cc == cc]
        if not kept:
            return Match(None, f"'{name}' with compute capability {cc[0]}.{cc[1]} matches no part", tuple(p.key for p in cands))
        cands = kept
    keys = tuple(p.key for p in cands)
    if len(cands) > 1 and not _same_peaks(cands):
        return Match(None, f"'{name}' is ambiguous: {', '.join(keys)} have different peaks", keys)
    chosen = cands[0]
    if len(cands) > 1:
        return Match(chosen, f"{', '.join(keys)} have the same peaks", keys)
    return Match(chosen, "by name" + (f", {' and '.join(why)}" if why else ""), keys)


def device_part(dev: Device | None) -> Match:
    """`match_device` for a trace's Device."""
    if dev is None:
        return Match(None, "the trace has no device properties")
    return match_device(dev.name, dev.total_memory, dev.sm_count, dev.compute_capability)
