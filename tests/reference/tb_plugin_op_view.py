"""Regenerates tb_plugin_op_view.json: torch-tb-profiler 0.4.3's parser, run offline on traces, its
operator view as JSON, grouped by operator name (the plugin's default view) and by name and input
shape: per group, calls, host/device self/total time, Tensor Cores eligible and self %. Usage (in a venv with
torch-tb-profiler==0.4.3):
    python tb_plugin_op_view.py CORPUS/traces/kineto/samples/resnet50_*/*.json.gz
"""
import gzip
import json
import sys

from torch_tb_profiler.profiler.data import RunProfileData


def row(a):
    return {"name": a.name, "calls": a.calls, "host_self_us": a.self_host_duration, "host_total_us": a.host_duration,
            "device_self_us": a.self_device_duration, "device_total_us": a.device_duration,
            "tc_eligible": bool(a.tc_eligible), "tc_self_pct": 100.0 * a.tc_self_ratio}


out = {}
for path in sys.argv[1:]:
    with gzip.open(path, "rt") as fh:
        doc = json.load(fh)
    d = RunProfileData.from_json("worker0", "1", doc)
    d.process()
    name = path.split("/")[-2]
    out[name] = {
        "path": "kineto/samples/" + name,
        "ops": sorted((row(a) for a in d.op_list_groupby_name), key=lambda r: r["name"]),
        "ops_by_shape": sorted(({**row(a), "input_shape": a.input_shape} for a in d.op_list_groupby_name_input),
                               key=lambda r: (r["name"], r["input_shape"])),
    }
json.dump({"generator": "tests/reference/tb_plugin_op_view.py, run with torch-tb-profiler 0.4.3 (RunProfileData.process) on the kineto tb_plugin samples",
           "traces": out}, sys.stdout, separators=(",", ":"))
