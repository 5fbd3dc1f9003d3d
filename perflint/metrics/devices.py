"""Device peaks: dense (non-sparse) math throughput per dtype, memory bandwidth, SM/CU count,
boost clock and GPU-to-GPU link of the data-centre GPUs traces come from, each part with the
vendor document its numbers come from, and the matching of a trace's device (name, memory, SM
count, compute capability) to one part.

Units: TFLOP/s (TOP/s for int8), GB/s (10^9 bytes/s, as vendors write it), GB of memory as the
vendor names the part (decimal, "80GB"), MHz. A link's figure is the document's "interconnect
bandwidth" (NVLink, or PCIe on parts without NVLink), both directions together.

Peak keys: `fp64`, `fp32`, `fp16` are the vector (CUDA core / SIMD) rates; `*_tc` the matrix rates
(NVIDIA Tensor Cores, AMD Matrix Cores): `fp64_tc`, `fp32_tc` (AMD's fp32 matrix rate), `tf32_tc`,
`fp16_tc`, `bf16_tc`, `fp8_tc`, `int8_tc`. A key is absent when the vendor document does not give
the number or the part lacks the unit; `notes` says which. Datasheets give Tensor Core numbers
"with sparsity" for Ampere and later NVIDIA parts (2:4 structured sparsity doubles them): the dense
number is half, and each such part says so in its notes. A value never comes from anywhere else.

Matching (`match_device`) never guesses: an unknown name, or a name whose candidate parts differ
in their peaks and which memory, SM count and compute capability do not tell apart, gives no
peaks and the reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from perflint.model import Device

VECTOR_KEYS = ("fp64", "fp32", "fp16")


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
MATRIX_KEYS = ("fp64_tc", "fp32_tc", "tf32_tc", "fp16_tc", "bf16_tc", "fp8_tc", "int8_tc")


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
    source: str  # the vendor document
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


_V100_DS = "NVIDIA Tesla V100 datasheet; Volta architecture whitepaper (SMs, boost clock)"
_V100_URL = "https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf"
_A100_DS = "NVIDIA A100 Tensor Core GPU datasheet; Ampere GA100 whitepaper (SMs, boost clock)"
_A100_URL = "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf"
_H100_DS = "NVIDIA H100 Tensor Core GPU datasheet"
_H100_URL = "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet"
_H200_DS = "NVIDIA H200 Tensor Core GPU datasheet"
_H200_URL = "https://www.nvidia.com/en-us/data-center/h200/"
_SPARSE = "datasheet Tensor Core figures are with sparsity: dense = half"
_BRIDGE = "; GPU-to-GPU link unknown: an NVLink bridge is optional, PCIe otherwise"
_MI200_NOTE = "one GCD: ROCm shows each of the package's two graphics compute dies as a device, so every number is half the datasheet's package figure"


def _half(p: dict[str, float]) -> dict[str, float]:
    return {k: v / 2 for k, v in p.items()}


_A100_PEAKS = {"fp64": 9.7, "fp64_tc": 19.5, "fp32": 19.5, "tf32_tc": 156.0, "fp16_tc": 312.0, "bf16_tc": 312.0, "int8_tc": 624.0}
_H100_SXM = {
    "fp64": 34.0, "fp64_tc": 67.0, "fp32": 67.0, "tf32_tc": 494.5, "fp16_tc": 989.5, "bf16_tc": 989.5,
    "fp8_tc": 1979.0, "int8_tc": 1979.0,
}  # fmt: skip
_H100_NVL = {
    "fp64": 30.0, "fp64_tc": 60.0, "fp32": 60.0, "tf32_tc": 417.5, "fp16_tc": 835.5, "bf16_tc": 835.5,
    "fp8_tc": 1670.5, "int8_tc": 1670.5,
}  # fmt: skip
_MI250X = {"fp64": 47.9, "fp64_tc": 95.7, "fp32": 47.9, "fp32_tc": 95.7, "fp16_tc": 383.0, "bf16_tc": 383.0, "int8_tc": 383.0}
_MI250 = {"fp64": 45.3, "fp64_tc": 90.5, "fp32": 45.3, "fp32_tc": 90.5, "fp16_tc": 362.1, "bf16_tc": 362.1, "int8_tc": 362.1}
_MI300 = {
    "fp64": 81.7, "fp64_tc": 163.4, "fp32": 163.4, "fp32_tc": 163.4, "tf32_tc": 653.7, "fp16_tc": 1307.4,
    "bf16_tc": 1307.4, "fp8_tc": 2614.9, "int8_tc": 2614.9,
}  # fmt: skip
_MI300_NOTE = "fp64/fp32 vector, matrix and TF32/FP16/BF16/FP8/INT8 matrix figures are AMD's dense peaks"


def _v100(form: str, mem: int, forms: frozenset[str]) -> Part:
    pcie = form == "pcie"
    return Part(
        key=f"v100-{form}-{mem}gb", part=f"NVIDIA Tesla V100 {'PCIe' if pcie else 'SXM2'} {mem}GB", vendor="nvidia",
        model="v100", forms=forms, bare=False, memory_gb=mem, sm_count=80, cc=(7, 0),
        boost_mhz=1380 if pcie else 1530, bandwidth_gbps=900.0,
        peaks={"fp64": 7.0, "fp32": 14.0, "fp16_tc": 112.0} if pcie else {"fp64": 7.8, "fp32": 15.7, "fp16_tc": 125.0},
        source=_V100_DS, url=_V100_URL,
        link=Link("PCIe Gen3 x16", 32.0) if pcie else Link("NVLink", 300.0),
        notes="Volta Tensor Cores: fp16 inputs only"
        + ("" if pcie else "; the DGX Station's V100 (DGXS) is this SXM2 part (DGX Station datasheet: 4 GPUs, 500 TFLOPS)"),
    )  # fmt: skip


def _a100(form: str, mem: int, bw: float, bare: bool) -> Part:
    pcie = form == "pcie"
    return Part(
        key=f"a100-{form}-{mem}gb", part=f"NVIDIA A100 {mem}GB {'PCIe' if pcie else 'SXM'}", vendor="nvidia",
        model="a100", forms=frozenset({"pcie"} if pcie else {"sxm4", "sxm"}), bare=bare, memory_gb=mem, sm_count=108,
        cc=(8, 0), boost_mhz=1410, bandwidth_gbps=bw, peaks=dict(_A100_PEAKS), source=_A100_DS, url=_A100_URL,
        link=None if pcie else Link("NVLink", 600.0),
        notes=_SPARSE + " (datasheet lists the dense figure beside it)" + (_BRIDGE if pcie else ""),
    )  # fmt: skip


PARTS: tuple[Part, ...] = (
    _v100("pcie", 16, frozenset({"pcie"})),
    _v100("pcie", 32, frozenset({"pcie"})),
    _v100("sxm2", 16, frozenset({"sxm2", "dgxs"})),
    _v100("sxm2", 32, frozenset({"sxm2", "dgxs"})),
    Part(
        key="t4",
        part="NVIDIA T4",
        vendor="nvidia",
        model="t4",
        forms=frozenset(),
        bare=True,
        memory_gb=16,
        sm_count=40,
        cc=(7, 5),
        boost_mhz=1590,
        bandwidth_gbps=320.0,
        peaks={"fp32": 8.1, "fp16_tc": 65.0, "int8_tc": 130.0},
        source="NVIDIA T4 Tensor Core GPU datasheet",
        url="https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/tesla-t4/t4-tensor-core-datasheet-951643.pdf",
        notes="fp16 Tensor Core figure is mixed precision (fp16 inputs, fp32 accumulate); no fp64 figure in the datasheet",
        link=Link("PCIe Gen3 x16", 32.0),
    ),
    Part(
        key="a10",
        part="NVIDIA A10",
        vendor="nvidia",
        model="a10",
        forms=frozenset(),
        bare=True,
        memory_gb=24,
        sm_count=72,
        cc=(8, 6),
        boost_mhz=None,
        bandwidth_gbps=600.0,
        peaks={"fp32": 31.2, "tf32_tc": 62.5, "fp16_tc": 125.0, "bf16_tc": 125.0, "int8_tc": 250.0},
        source="NVIDIA A10 Tensor Core GPU datasheet",
        url="https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a10/pdf/datasheet-new/nvidia-a10-datasheet.pdf",
        notes=_SPARSE + " (datasheet lists the dense figure beside it); no fp64 figure or boost clock in the datasheet",
        link=Link("PCIe Gen4 x16", 64.0),
    ),
    _a100("pcie", 40, 1555.0, bare=False),
    _a100("sxm", 40, 1555.0, bare=True),
    _a100("pcie", 80, 1935.0, bare=False),
    _a100("sxm", 80, 2039.0, bare=True),
    Part(
        key="l4",
        part="NVIDIA L4",
        vendor="nvidia",
        model="l4",
        forms=frozenset(),
        bare=True,
        memory_gb=24,
        sm_count=58,
        cc=(8, 9),
        boost_mhz=None,
        bandwidth_gbps=300.0,
        peaks={"fp32": 30.3, "tf32_tc": 60.0, "fp16_tc": 121.0, "bf16_tc": 121.0, "fp8_tc": 242.5, "int8_tc": 242.5},
        source="NVIDIA L4 Tensor Core GPU datasheet",
        url="https://resources.nvidia.com/en-us-data-center-overview/l4-gpu-datasheet",
        notes=_SPARSE + " (TF32 120, FP16/BF16 242, FP8/INT8 485 with sparsity); no fp64 figure or boost clock in the datasheet",
        link=Link("PCIe Gen4 x16", 64.0),
    ),
    Part(
        key="l40s",
        part="NVIDIA L40S",
        vendor="nvidia",
        model="l40s",
        forms=frozenset(),
        bare=True,
        memory_gb=48,
        sm_count=142,
        cc=(8, 9),
        boost_mhz=None,
        bandwidth_gbps=864.0,
        peaks={"fp32": 91.6, "tf32_tc": 183.0, "fp16_tc": 362.05, "bf16_tc": 362.05, "fp8_tc": 733.0, "int8_tc": 733.0},
        source="NVIDIA L40S GPU datasheet",
        url="https://resources.nvidia.com/en-us-l40s/l40s-datasheet-28413",
        notes=_SPARSE + " (datasheet lists the dense figure beside it); no fp64 figure or boost clock in the datasheet",
        link=Link("PCIe Gen4 x16", 64.0),
    ),
    Part(
        key="h100-sxm",
        part="NVIDIA H100 SXM",
        vendor="nvidia",
        model="h100",
        forms=frozenset({"sxm", "sxm5"}),
        bare=True,
        memory_gb=80,
        sm_count=132,
        cc=(9, 0),
        boost_mhz=None,
        bandwidth_gbps=3350.0,
        peaks=dict(_H100_SXM),
        source=_H100_DS,
        url=_H100_URL,
        notes=_SPARSE + " (TF32 989, FP16/BF16 1979, FP8/INT8 3958 with sparsity); no boost clock in the datasheet",
        link=Link("NVLink", 900.0),
    ),
    Part(
        key="h100-pcie",
        part="NVIDIA H100 PCIe",
        vendor="nvidia",
        model="h100",
        forms=frozenset({"pcie"}),
        bare=False,
        memory_gb=80,
        sm_count=114,
        cc=(9, 0),
        boost_mhz=None,
        bandwidth_gbps=2000.0,
        peaks={
            "fp64": 26.0,
            "fp64_tc": 51.0,
            "fp32": 51.0,
            "tf32_tc": 378.0,
            "fp16_tc": 756.5,
            "bf16_tc": 756.5,
            "fp8_tc": 1513.0,
            "int8_tc": 1513.0,
        },
        source=_H100_DS,
        url=_H100_URL,
        notes=_SPARSE + " (TF32 756, FP16/BF16 1513, FP8/INT8 3026 with sparsity); no boost clock in the datasheet" + _BRIDGE,
    ),  # fmt: skip
    Part(
        key="h100-nvl",
        part="NVIDIA H100 NVL",
        vendor="nvidia",
        model="h100",
        forms=frozenset({"nvl"}),
        bare=False,
        memory_gb=94,
        sm_count=132,
        cc=(9, 0),
        boost_mhz=None,
        bandwidth_gbps=3900.0,
        peaks=dict(_H100_NVL),
        source=_H100_DS,
        url=_H100_URL,
        notes=_SPARSE + " (TF32 835, FP16/BF16 1671, FP8/INT8 3341 with sparsity); per GPU; no boost clock in the datasheet" + _BRIDGE,
    ),
    Part(
        key="h200-sxm",
        part="NVIDIA H200 SXM",
        vendor="nvidia",
        model="h200",
        forms=frozenset({"sxm", "sxm5"}),
        bare=True,
        memory_gb=141,
        sm_count=132,
        cc=(9, 0),
        boost_mhz=None,
        bandwidth_gbps=4800.0,
        peaks=dict(_H100_SXM),
        source=_H200_DS,
        url=_H200_URL,
        notes=_SPARSE + " (TF32 989, FP16/BF16 1979, FP8/INT8 3958 with sparsity); no boost clock in the datasheet",
        link=Link("NVLink", 900.0),
    ),
    Part(
        key="h200-nvl",
        part="NVIDIA H200 NVL",
        vendor="nvidia",
        model="h200",
        forms=frozenset({"nvl"}),
        bare=False,
        memory_gb=141,
        sm_count=132,
        cc=(9, 0),
        boost_mhz=None,
        bandwidth_gbps=4800.0,
        peaks=dict(_H100_NVL),
        source=_H200_DS,
        url=_H200_URL,
        notes=_SPARSE + " (TF32 835, FP16/BF16 1671, FP8/INT8 3341 with sparsity); no boost clock in the datasheet" + _BRIDGE,
    ),
    Part(
        key="b200",
        part="NVIDIA B200 (HGX B200)",
        vendor="nvidia",
        model="b200",
        forms=frozenset(),
        bare=True,
        memory_gb=None,
        sm_count=None,
        cc=(10, 0),
        boost_mhz=None,
        bandwidth_gbps=8000.0,
        peaks={"fp16_tc": 2250.0, "bf16_tc": 2250.0, "fp8_tc": 4500.0, "int8_tc": 4500.0},
        source="NVIDIA HGX B200 datasheet (8-GPU figures divided by 8)",
        url="https://www.nvidia.com/en-us/data-center/hgx/",
        notes=_SPARSE + " (FP16/BF16 4.5, FP8/INT8 9 PFLOPS with sparsity per GPU); fp64, fp32 and TF32 left empty: "
        "datasheet revisions disagree; memory (180 or 192 GB by revision), SM count and clock not used",
        link=Link("NVLink", 1800.0),
    ),
    Part(
        key="gb200",
        part="NVIDIA GB200 (Blackwell GPU of a GB200 superchip)",
        vendor="nvidia",
        model="gb200",
        forms=frozenset(),
        bare=True,
        memory_gb=None,
        sm_count=None,
        cc=(10, 0),
        boost_mhz=None,
        bandwidth_gbps=8000.0,
        peaks={"fp64": 45.0, "fp64_tc": 45.0, "tf32_tc": 1250.0, "fp16_tc": 2500.0, "bf16_tc": 2500.0, "fp8_tc": 5000.0, "int8_tc": 5000.0},
        source="NVIDIA GB200 NVL72 datasheet (superchip figures divided by its 2 GPUs)",
        url="https://www.nvidia.com/en-us/data-center/gb200-nvl72/",
        notes=_SPARSE + " (TF32 2.5, FP16/BF16 5, FP8/INT8 10 PFLOPS with sparsity per GPU); no fp32 vector figure; memory, SM count and clock not used",
        link=Link("NVLink", 1800.0),
    ),
    Part(
        key="mi210",
        part="AMD Instinct MI210",
        vendor="amd",
        model="mi210",
        forms=frozenset(),
        bare=True,
        memory_gb=64,
        sm_count=104,
        cc=None,
        boost_mhz=1700,
        bandwidth_gbps=1600.0,
        peaks={"fp64": 22.6, "fp64_tc": 45.3, "fp32": 22.6, "fp32_tc": 45.3, "fp16_tc": 181.0, "bf16_tc": 181.0, "int8_tc": 181.0},
        source="AMD Instinct MI210 accelerator specifications",
        url="https://www.amd.com/en/products/accelerators/instinct/mi200/mi210.html",
        notes="CDNA 2 has no TF32 or FP8; bandwidth is AMD's rounded 1.6 TB/s",
    ),
    Part(
        key="mi250x-gcd",
        part="AMD Instinct MI250X (one GCD)",
        vendor="amd",
        model="mi250x",
        forms=frozenset(),
        bare=True,
        memory_gb=64,
        sm_count=110,
        cc=None,
        boost_mhz=1700,
        bandwidth_gbps=1638.4,
        peaks=_half(_MI250X),
        source="AMD Instinct MI250X accelerator specifications",
        url="https://www.amd.com/en/products/accelerators/instinct/mi200/mi250x.html",
        notes=_MI200_NOTE + " (package: 220 CUs, 128 GB, 3.2768 TB/s); CDNA 2 has no TF32 or FP8",
    ),
    Part(
        key="mi250-gcd",
        part="AMD Instinct MI250 (one GCD)",
        vendor="amd",
        model="mi250",
        forms=frozenset(),
        bare=True,
        memory_gb=64,
        sm_count=104,
        cc=None,
        boost_mhz=1700,
        bandwidth_gbps=1638.4,
        peaks=_half(_MI250),
        source="AMD Instinct MI250 accelerator specifications",
        url="https://www.amd.com/en/products/accelerators/instinct/mi200/mi250.html",
        notes=_MI200_NOTE + " (package: 208 CUs, 128 GB, 3.2768 TB/s); CDNA 2 has no TF32 or FP8",
    ),
    Part(
        key="mi300x",
        part="AMD Instinct MI300X",
        vendor="amd",
        model="mi300x",
        forms=frozenset(),
        bare=True,
        memory_gb=192,
        sm_count=304,
        cc=None,
        boost_mhz=2100,
        bandwidth_gbps=5300.0,
        peaks=dict(_MI300),
        source="AMD Instinct MI300X data sheet",
        url="https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/data-sheets/amd-instinct-mi300x-data-sheet.pdf",
        notes=_MI300_NOTE,
    ),
    Part(
        key="mi325x",
        part="AMD Instinct MI325X",
        vendor="amd",
        model="mi325x",
        forms=frozenset(),
        bare=True,
        memory_gb=256,
        sm_count=304,
        cc=None,
        boost_mhz=2100,
        bandwidth_gbps=6000.0,
        peaks=dict(_MI300),
        source="AMD Instinct MI325X accelerator specifications",
        url="https://www.amd.com/en/products/accelerators/instinct/mi300/mi325x.html",
        notes=_MI300_NOTE + " (the same compute as the MI300X)",
    ),
)

_MODELS = frozenset(p.model for p in PARTS)
_FORM_TOKENS = frozenset(f for p in PARTS for f in p.forms) | {"oam"}
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
    toks = _tokens(name)
    models = [t for t in toks if t in _MODELS]
    if not models:
        return Match(None, f"'{name}' is not in the device peak table")
    forms = {t for t in toks if t in _FORM_TOKENS} - {"oam"}
    mems = {int(m.group(1)) for t in toks if (m := _MEM.fullmatch(t))}
    cands = [p for p in PARTS if p.model in models]
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
