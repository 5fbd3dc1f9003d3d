"""Regenerates tb_plugin_step_breakdown.json: torch-tb-profiler 0.4.3's parser, run offline on traces,
its step-time breakdown (per step and averaged) as JSON. Usage (in a venv with torch-tb-profiler==0.4.3):
    python tb_plugin_step_breakdown.py CORPUS/traces/kineto/samples/resnet50_*/*.json.gz
"""
import gzip
import json
import sys

from torch_tb_profiler.profiler.data import RunProfileData
from torch_tb_profiler.profiler.event_parser import ProfileRole

ROLES = {"kernel": ProfileRole.Kernel, "memcpy": ProfileRole.Memcpy, "memset": ProfileRole.Memset,
         "communication": ProfileRole.Communication, "runtime": ProfileRole.Runtime,
         "dataloader": ProfileRole.DataLoader, "cpu_exec": ProfileRole.CpuOp, "other": ProfileRole.Other}
out = {}
for path in sys.argv[1:]:
    with gzip.open(path, "rt") as fh:
        doc = json.load(fh)
    d = RunProfileData.from_json("worker0", "1", doc)
    d.process()
    name = path.split("/")[-2]
    out[name] = {
        "steps": [{"name": n, "total_us": c.costs[ProfileRole.Total], **{k: c.costs[r] for k, r in ROLES.items()}}
                  for n, c in zip(d.steps_names, d.steps_costs)],
        "average": {"total_us": d.avg_costs.costs[ProfileRole.Total], **{k: d.avg_costs.costs[r] for k, r in ROLES.items()}},
    }
json.dump(out, sys.stdout, indent=1)
