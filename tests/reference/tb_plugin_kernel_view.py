"""Regenerates tb_plugin_kernel_view.json: torch-tb-profiler 0.4.3's parser, run offline on traces,
its kernel view (KernelParser.kernel_stat: per kernel name Tensor Cores used, calls, total / mean /
max / min duration, duration-weighted mean blocks per SM and est. achieved occupancy) as JSON.
Usage (in a venv with torch-tb-profiler==0.4.3):
    python tb_plugin_kernel_view.py CORPUS/traces/kineto/samples/resnet50_*/*.json.gz
"""
import gzip
import json
import sys

from torch_tb_profiler.profiler.data import RunProfileData

out = {}
for path in sys.argv[1:]:
    with gzip.open(path, "rt") as fh:
        doc = json.load(fh)
    d = RunProfileData.from_json("worker0", "1", doc)
    d.process()
    name = path.split("/")[-2]
    ks = d.kernel_stat
    out[name] = {
        "path": "kineto/samples/" + name,
        "tc_used_ratio": d.tc_used_ratio,
        "kernels": [
            {"name": n, "tensor_cores": bool(r["tc_used"]), "calls": int(r["count"]), "total_us": float(r["sum"]),
             "mean_us": float(r["mean"]), "max_us": float(r["max"]), "min_us": float(r["min"]),
             "blocks_per_sm": float(r["blocks_per_sm"]), "occupancy_pct": float(r["occupancy"])}
            for n, r in ks.iterrows()
        ],
    }
json.dump({"generator": "tests/reference/tb_plugin_kernel_view.py, run with torch-tb-profiler 0.4.3 (RunProfileData.process, "
           "KernelParser) on the kineto tb_plugin samples", "traces": out}, sys.stdout, indent=1)
sys.stdout.write("\n")
