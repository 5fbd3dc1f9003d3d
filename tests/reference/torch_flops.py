"""Record `fixtures/flops/flops_ops.pt.trace.json.gz` (a real torch.profiler CPU trace of the ops
PyTorch's profiler counts FLOPs for) and `tests/reference/torch_flops.json`: per op name and Input
Dims, the FLOPs torch.profiler's own counter (`with_flops=True`) gives each call. PyTorch does not
write that count into the exported trace, so it is kept beside it for the test that holds
perflint's FLOP models to it (tests/metrics/test_flops.py).

    python3 -m venv /tmp/torchvenv && /tmp/torchvenv/bin/pip install torch numpy
    /tmp/torchvenv/bin/python tests/reference/torch_flops.py
"""

from __future__ import annotations

import gzip
import json
import shutil
import tempfile
from pathlib import Path

import torch
from torch.nn import functional as F
from torch.profiler import ProfilerActivity, profile

ROOT = Path(__file__).resolve().parents[2]
TRACE = ROOT / "fixtures" / "flops" / "flops_ops.pt.trace.json.gz"
OUT = Path(__file__).resolve().parent / "torch_flops.json"


def run() -> None:
    a, b, c = torch.randn(64, 128), torch.randn(128, 32), torch.randn(64, 32)
    x, y, z = torch.randn(4, 64, 128), torch.randn(4, 128, 32), torch.randn(4, 64, 32)
    img = torch.randn(2, 3, 32, 32)
    torch.mm(a, b)
    torch.addmm(c, a, b)
    torch.bmm(x, y)
    torch.baddbmm(z, x, y)
    torch.matmul(a, b)
    F.linear(a, b.t().contiguous(), c[0])
    F.conv2d(img, torch.randn(8, 3, 3, 3), stride=1, padding=1)
    F.conv2d(img, torch.randn(16, 3, 5, 5), stride=2, padding=2)
    F.conv2d(img, torch.randn(6, 1, 3, 3), stride=1, padding=0, groups=3)
    F.conv2d(torch.randn(1, 8, 17, 17), torch.randn(8, 8, 3, 3), stride=2, padding=1, dilation=2)
    torch.mul(a, a)
    torch.add(a, a)
    torch.mul(x, 2.0)


def main() -> None:
    torch.manual_seed(0)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_flops=True) as prof:
        run()
    counted: dict[str, int] = {}
    for e in prof.events():
        if e.flops:
            key = json.dumps([e.name, [list(s) for s in e.input_shapes]])
            counted[key] = int(e.flops)
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "t.json"
        prof.export_chrome_trace(str(raw))
        with raw.open("rb") as src, open(TRACE, "wb") as dst_raw, gzip.GzipFile(filename="", mode="wb", fileobj=dst_raw, mtime=0) as dst:
            shutil.copyfileobj(src, dst)
    rows = [{"op": json.loads(k)[0], "input_dims": json.loads(k)[1], "flops": v} for k, v in sorted(counted.items())]
    body = ",\n".join("  " + json.dumps(r) for r in rows)
    OUT.write_text(f'{{"generator": "tests/reference/torch_flops.py, torch {torch.__version__}", "ops": [\n{body}\n]}}\n')
    print(f"{len(rows)} counted op shapes -> {OUT}; trace -> {TRACE}")


if __name__ == "__main__":
    main()
