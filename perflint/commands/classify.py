"""`perflint classify NAME...`: how perflint reads a kernel name (its parse) and what it decides
(category, library, dtype, Tensor Cores, SIMT), with the table row that decided."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from perflint.errors import UsageError


def add_parser(sub: Any, name: str) -> None:
    p = sub.add_parser(name, help="show how a kernel name is parsed and classified (names from stdin with '-' or none)")
    p.add_argument("names", nargs="*", metavar="KERNEL", help="kernel names; '-' or none: one per line on stdin")
    p.add_argument("--vendor", choices=("nvidia", "amd"), default=None, help="the device vendor (Triton's tl.dot)")
    p.add_argument("--format", choices=("text", "json"), default="text", help="text for people (default), json for tools")


def _names(args: argparse.Namespace) -> list[str]:
    given = list(args.names)
    if not given or given == ["-"]:
        return [line.rstrip("\r\n") for line in sys.stdin if line.strip()]
    if "-" in given:
        raise UsageError("classify", "'-' (read stdin) cannot be mixed with names")
    return given


def _record(name: str, vendor: str | None) -> dict[str, Any]:
    from perflint.kernelnames.classify import classify_kernel
    from perflint.kernelnames.parse import short_name

    c = classify_kernel(name, vendor)
    k = c.name
    return {
        "name": name,
        "short_name": short_name(name),
        "parse": {
            "form": k.form,
            "demangled": k.demangled,
            "return_type": k.return_type or None,
            "namespaces": list(k.namespaces),
            "function": k.function,
            "template_args": list(k.template_args),
            "params": None if k.params is None else list(k.params),
        },
        "category": c.category,
        "library": c.library or None,
        "dtype": c.dtype,
        "tensor_cores": c.tensor_cores,
        "simt": c.simt,
        "helper": c.helper,
        "layout_conversion": c.layout_conversion,
        "row": c.row,
        "via": c.via,
        "matched": c.identity.qualified,
        "note": c.note,
        "vendor": vendor,
    }


def _yes_no(v: bool | None) -> str:
    return "unknown / not a matrix kernel" if v is None else ("yes" if v else "no")


def _text(r: dict[str, Any]) -> str:
    p = r["parse"]
    lines = [r["name"]]
    if p["demangled"] and p["demangled"] != r["name"]:
        lines.append(f"  demangled:     {p['demangled']}")
    lines.append(f"  form:          {p['form']}")
    if p["return_type"]:
        lines.append(f"  return type:   {p['return_type']}")
    lines.append(f"  namespaces:    {'::'.join(p['namespaces']) or '-'}")
    lines.append(f"  function:      {p['function']}")
    if p["template_args"]:
        lines.append("  template args:")
        lines += [f"    [{i}] {a}" for i, a in enumerate(p["template_args"])]
    if p["params"] is not None:
        lines.append(f"  params:        ({', '.join(p['params'])})")
    lines.append(f"  short name:    {r['short_name']}")
    lines.append(f"  category:      {r['category']}")
    lines.append(f"  library:       {r['library'] or '-'}")
    lines.append(f"  dtype:         {r['dtype'] or '- (not in the name)'}")
    lines.append(f"  tensor cores:  {_yes_no(r['tensor_cores'])}" + ("  (library helper)" if r["helper"] else ""))
    lines.append(f"  fp32 SIMT:     {'yes' if r['simt'] else 'no'}")
    if r["layout_conversion"]:
        lines.append("  layout:        converts NCHW <-> NHWC")
    via = f" via {r['via']} (template argument {r['matched']})" if r["via"] else ""
    lines.append(f"  decided by:    row {r['row']}{via}" + (f": {r['note']}" if r["note"] else ""))
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    names = _names(args)
    if not names:
        raise UsageError("classify", "no kernel names given (pass them as arguments or one per line on stdin)")
    records = [_record(n, args.vendor) for n in names]
    if args.format == "json":
        sys.stdout.write(json.dumps(records, indent=2) + "\n")
    else:
        sys.stdout.write("\n\n".join(_text(r) for r in records) + "\n")
    return 0
