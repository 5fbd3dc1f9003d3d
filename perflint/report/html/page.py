"""The HTML report page: verdict, findings, then per trace the GPU summary and its charts, each
chart with its numbers in a table behind it (details/summary)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import escape
from typing import Any

from perflint._version import __version__
from perflint.report.html import svg
from perflint.report.html.assets import CSS, JS
from perflint.units import fmt_duration, fmt_size, plural

Cell = tuple[str, float | None]  # shown text, sort value (None: sort by text)
MAX_RANK_DETAILS = 8  # a run with more ranks details only its slowest and fastest ones
MAX_TRACE_DETAILS = 50


def table(head: Sequence[tuple[str, bool]], rows: Sequence[Sequence[Cell]], sortable: bool = True) -> str:
    """`head`: (title, numeric) per column; numeric cells sort by their value."""
    cls = ' class="sortable"' if sortable else ""
    th = "".join(
        f'<th scope="col" class="{"n " if n else ""}{"sortable" if sortable else ""}">{escape(h)}</th>' for h, n in head
    )
    body = []
    for r in rows:
        tds = []
        for (text, v), (_, n) in zip(r, head):
            dv = f' data-v="{v!r}"' if v is not None else ""
            tds.append(f'<td{" class=n" if n else ""}{dv}>{text}</td>')
        body.append(f"<tr>{''.join(tds)}</tr>")
    return f'<div class="tw"><table{cls}><thead><tr>{th}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'


def figure(chart: str, caption: str, tab: str) -> str:
    return (f'<figure class="fig">{chart}<figcaption class="mut">{escape(caption)}</figcaption>'
            f"<details><summary>Table: {escape(caption)}</summary>{tab}</details></figure>")


def n(x: float | None, unit: str = "", nd: int = 1) -> Cell:
    """A number with `nd` decimals (none for a whole number), thousands separated."""
    if x is None:
        return ("n/a", None)
    text = f"{x:,.0f}" if float(x).is_integer() else f"{x:,.{nd}f}"
    return (escape(text + unit), float(x))


def breakable(text: str) -> str:
    """`text` escaped, with line-break chances after its dots, dashes and underscores, so dotted
    names wrap at their parts rather than letter by letter."""
    return '<span class="brk">' + re.sub(r"([._\-/])", "\\1<wbr>", escape(text)) + "</span>"


def d(us: float | None) -> Cell:
    """A duration in µs, shown in the unit its size calls for (µs, ms, s)."""
    return ("n/a", None) if us is None else (escape(fmt_duration(us)), float(us))


def b(nbytes: float | None) -> Cell:
    """A size in bytes, shown in KB, MB or GB."""
    return ("n/a", None) if nbytes is None else (escape(fmt_size(nbytes)), float(nbytes))


def distinct_labels(keys: Sequence[tuple[str, Any]]) -> list[str]:
    """A label per (path, rank): the shortest trailing part of the path that no other trace shares
    (two runs' "profiler" directories become "run_1/profiler" and "run_2/profiler"), with the rank."""
    parts = [[x for x in path.replace("\\", "/").split("/") if x] or [path] for path, _ in keys]
    depth = [1] * len(keys)
    for _ in range(max((len(p) for p in parts), default=1)):
        tails = ["/".join(p[-k:]) for p, k in zip(parts, depth)]
        seen: dict[str, int] = {}
        for (tail, (_, rank)) in zip(tails, keys):
            seen[f"{tail}\0{rank}"] = seen.get(f"{tail}\0{rank}", 0) + 1
        clash = [seen[f"{tail}\0{rank}"] > 1 for tail, (_, rank) in zip(tails, keys)]
        if not any(clash):
            break
        depth = [k + 1 if c and k < len(p) else k for k, c, p in zip(depth, clash, parts)]
    return ["/".join(p[-k:]) + (f" [rank {rank}]" if rank is not None else "") for p, k, (_, rank) in zip(parts, depth, keys)]


def t(text: Any) -> Cell:
    return (escape("" if text is None else str(text)), None)


def code(text: Any, limit: int = 140) -> Cell:
    """Monospace text (kernel names run to kilobytes): cut to `limit`, the whole in its tooltip."""
    full = str(text)
    shown = svg.short(full, limit)
    tip = f' title="{escape(full)}"' if shown != full else ""
    return (f"<code{tip}>{escape(shown)}</code>", None)


def document(title: str, body: list[str]) -> str:
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        '<meta name="color-scheme" content="light dark">'
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body><main>"
        + "".join(body)
        + f'<p class="mut">perflint {escape(__version__)}</p></main><script>{JS}</script></body></html>\n'
    )


def _pct(x: Any) -> str:
    return "n/a" if x is None else f"{x:.1f}%"


def gpu_cards(p: dict[str, Any]) -> str:
    dev, gpu = p.get("device") or {}, p.get("gpu") or {}
    tc = (p.get("tensor_cores") or {}).get("kernel_time_pct")
    name = dev.get("name") or "unknown device"
    extra = ", ".join(x for x in (f"{dev['sm_count']} SMs" if dev.get("sm_count") else "",
                                  f"cc {dev['compute_capability']}" if dev.get("compute_capability") else "") if x)
    cards = [
        ("Device", escape(name), escape(extra)),
        ("GPU utilization", _pct(gpu.get("utilization_pct")), "TB plugin"),
        ("Est. SM efficiency", _pct(gpu.get("sm_efficiency_pct")), "TB plugin"),
        ("Est. occupancy", _pct(gpu.get("achieved_occupancy_pct")), "TB plugin"),
        ("Tensor Core share", _pct(tc), "of kernel time"),
    ]
    return '<div class="cards">' + "".join(
        f'<div class="card"><span class="mut">{k}</span><b>{v}</b><span class="mut">{d}</span></div>' for k, v, d in cards
    ) + "</div>"


def breakdown_block(p: dict[str, Any]) -> str:
    bd = p.get("breakdown")
    if bd is None:
        return f'<p class="mut">Step-time breakdown: {escape(p.get("breakdown_why") or "not available")}.</p>'
    parts = bd["parts"]
    steps = bd["steps"]
    labels = [str(s["step"]) for s in steps]
    chart = svg.stacked("Step-time breakdown per step", labels, parts, [[s[q]["us"] for q in parts] for s in steps])
    head = [("step", True), ("total", True)] + [(q, True) for q in parts]
    rows = [[(str(s["step"]), float(s["step"])), d(s["total_us"])] + [d(s[q]["us"]) for q in parts] for s in steps]
    avg = bd["average"]
    avg_line = ", ".join(f"{q} {avg[q]['pct']:.1f}%" for q in parts)
    note = f" ({len(steps)} of {plural(bd['all_steps'], 'step')} shown, evenly spaced)" if bd["all_steps"] > len(steps) else ""
    # The TB plugin's steps: every ProfilerStep, the first and last included, so its mean differs
    # from the step model's median analysis step above.
    what = "the one ProfilerStep" if avg["steps"] == 1 else f"all {avg['steps']} ProfilerSteps, the first and last included"
    return (f"<h3>Step-time breakdown</h3><p>Mean step {escape(fmt_duration(avg['total_us']))} over {what} (the TensorBoard "
            f"plugin's steps; not the single median analysis step above): {escape(avg_line)}{escape(note)}</p>" + figure(chart, "step time by part, per step (TB plugin's breakdown)", table(head, rows)))


def timeline_block(p: dict[str, Any]) -> str:
    tl = p.get("timeline")
    if not tl:
        return ""
    out = ["<h3>GPU busy timeline</h3>"]
    for dev, vals in tl["devices"].items():
        bucket = fmt_duration(tl["bucket_us"])
        chart = svg.area(f"GPU {dev} utilization per {bucket} bucket", vals, tl["bucket_us"])
        rows = [[d(i * tl["bucket_us"]), n(100.0 * v)] for i, v in enumerate(vals)]
        out.append(figure(chart, f"GPU {dev} utilization per {bucket} bucket (TB plugin series)",
                          table([("offset", True), ("busy %", True)], rows)))
    return "".join(out)


def category_block(p: dict[str, Any]) -> str:
    cats = (p.get("kernels") or {}).get("by_category") or {}
    rows = sorted(((c, v["time_us"], v["pct"]) for c, v in cats.items() if v["time_us"] > 0), key=lambda r: -r[1])
    if not rows:
        return ""
    chart = svg.hbars("GPU time by kernel category", [(c, us) for c, us, _ in rows], "us")
    tab = table([("category", False), ("time", True), ("% of GPU time", True)], [[t(c), d(us), n(pc)] for c, us, pc in rows])
    return "<h3>Kernel time by category</h3>" + figure(chart, "GPU time by kernel category", tab)


def kernels_block(p: dict[str, Any]) -> str:
    top = (p.get("kernels") or {}).get("top") or []
    if not top:
        return ""
    rows = [[code(k["name"]), code(k.get("top_level_op") or ""), n(k["count"], nd=0), d(k["total_us"]), d(k["mean_us"])] for k in top]
    return "<h3>Top kernels</h3>" + table(
        [("kernel", False), ("top-level op", False), ("calls", True), ("total", True), ("mean", True)], rows)


KERNEL_VIEW_ROWS = 100  # the JSON output carries every kernel name


def kernel_view_block(p: dict[str, Any]) -> str:
    """The TensorBoard plugin's kernel view (`perflint summary`), behind a disclosure."""
    kv = p.get("kernel_view") or []
    if not kv:
        return ""
    tc = {None: "-", True: "yes", False: "no"}
    rows = [[code(k["name"]), t(tc[k["tensor_cores"]]), n(k["calls"], nd=0), d(k["total_us"]), d(k["mean_us"]), d(k["max_us"]),
             d(k["min_us"]), n(k["blocks_per_sm"], nd=2), n(k["occupancy_pct"], "%")] for k in kv[:KERNEL_VIEW_ROWS]]
    tab = table([("kernel", False), ("Tensor Cores", False), ("calls", True), ("total", True), ("mean", True), ("max", True),
                 ("min", True), ("mean blocks/SM", True), ("mean est. occupancy", True)], rows)
    more = f" (top {KERNEL_VIEW_ROWS} of {len(kv)})" if len(kv) > KERNEL_VIEW_ROWS else ""
    return f"<details><summary>Kernel view: {len(kv)} kernel names{more}</summary>{tab}</details>"


def ops_block(p: dict[str, Any]) -> str:
    ops = p.get("ops") or []
    if not ops:
        return ""
    rows = [[code(o["name"]), n(o["calls"], nd=0), d(o["host_us"]), d(o["device_self_us"])] for o in ops]
    return "<h3>Top ops</h3>" + table([("op", False), ("calls", True), ("host total", True), ("device self", True)], rows)


def comparison_block(cmp: dict[str, Any] | None, alpha: float = 0.05, top: int = 15) -> str:
    """Before/after per-step distributions with the significance test's result, then the rows the
    diff's text report lists, in its order."""
    from perflint.baseline.verdict import change_text, kind_of
    from perflint.report.diff import row_label, sections

    if not cmp:
        return ""
    by_metric = {r["metric"]: r for r in cmp["rows"] if r["metric"] in cmp["samples"]}
    out = [f"<h3>Against the baseline</h3><p class=mut>baseline: <code>{escape(str(cmp.get('base')))}</code></p>"]
    for metric, s in cmp["samples"].items():
        unit = "%" if metric.endswith("_pct") else "us"
        chart = svg.strips(f"{metric} per step, baseline vs current", [("baseline", s["base"]), ("current", s["current"])], unit)
        r = by_metric.get(metric)
        caption = f"{metric}: {change_text(r, alpha) if r else 'n/a'}"
        rows = [[t(side), n(float(i), nd=0), _of(kind_of(metric), v)] for side in ("base", "current") for i, v in enumerate(s[side])]
        out.append(f"<h4>{escape(caption)}</h4>" + figure(chart, f"{metric} per analysis step", table(
            [("side", False), ("step #", True), (metric, True)], rows)))
    (_, listed, bound), = sections([{"base": "", "current": "", "rank": None, "rows": cmp["rows"]}], top)
    listed = [r for r in listed if r["metric"] not in cmp["samples"]]
    if listed:
        out.append(table(
            [("what", False), ("baseline", True), ("current", True), ("delta %", True), ("significance", False)],
            [[code(row_label(r)), _of(kind_of(r["metric"]), r["base_median"]), _of(kind_of(r["metric"]), r["cur_median"]),
              ("n/a", None) if r["delta_pct"] is None else (f'{r["delta_pct"]:+.1f}%', r["delta_pct"]), (f"<span class=nw>{escape(change_text(r, alpha))}</span>", None)] for r in listed]))
        out.append(f"<p class=mut>Medians over analysis steps; one-sided Mann-Whitney U, * = p &lt; {alpha}.</p>")
    if bound:
        out.append(_bound_table(bound))
    return "".join(out)


def _of(kind: str, x: float | None) -> Cell:
    """A diff row's value in its kind's unit: durations, sizes, counts or percentages."""
    if kind == "time":
        return d(x)
    if kind == "bytes":
        return b(x)
    return n(x, "%" if kind == "pct" else "", nd=1)


def _bound_table(bound: list[dict[str, Any]]) -> str:
    """The median step's change split along its critical path, as the text diff splits it."""
    from perflint.report.diff import bound_split, share_text, step_change_text

    base, cur, split = bound_split(bound)
    rows = [
        [t(label), d(b_us), d(c_us), (escape(("+" if delta > 0 else "") + fmt_duration(delta)), delta), (share_text(pct), pct)]
        for label, b_us, c_us, delta, pct in split
    ]
    head = f"The median step {escape(step_change_text(base, cur)).replace('-&gt;', '&rarr;')}, split along its critical path:"
    return f"<p>{head}</p>" + table([("critical path", False), ("baseline", True), ("current", True), ("delta", True),
                                     ("share of the change", True)], rows)


def _rank_lanes(lanes: dict[str, Any] | None, c: int) -> str:
    """The median step's collectives across the ranks joined at them: each rank's time in each
    (grey) and this rank's waits for the last arrival (coloured, named by the rank waited for)."""
    if not lanes:
        return ""
    lo, hi, me = lanes["lo"], lanes["hi"], f"rank {lanes['rank']}"
    busy = [(f"rank {r}", ivs) for r, ivs in lanes["busy"].items()]
    waits = [(me, a, b, f"waits for rank {late}: {name}", c) for a, b, late, name in lanes["waits"]]
    chart = svg.lanes("the median step's collectives across ranks", lo, hi, busy, waits)
    rows = [[t(me), d(a - lo), d(b - a), t(f"rank {late}"), code(name)] for a, b, late, name in lanes["waits"]]
    return figure(chart, f"the median step's collectives on each rank (grey, {me}'s clock) and {me}'s waits in them for the last rank to arrive (coloured)",
                  table([("rank", False), ("start", True), ("waits", True), ("for", False), ("collective", False)], rows))


def step_model_block(p: dict[str, Any]) -> str:
    """What bounds the median step: the bound-by bar, the critical path drawn over the lanes it
    crosses, and what each finding's fix (and all of them together) would make of the step."""
    sm = p.get("step_model") or {}
    bound = sm.get("bound_by") or []
    if not bound:
        return ""
    err = sm.get("replay_error_pct")
    step = sm.get("median_step")
    total = sum(b["us"] for b in bound)
    colour = {b["category"]: i for i, b in enumerate(bound)}  # by rank: the largest get distinct colours
    # One step, not an average: the median of the analysis steps (edge steps excluded unless asked).
    window = (p.get("steps") or {}).get("window")
    what = (f"Median step {step} (a single step: the median of the analysis steps, {window})" if window else
            f"Median step {step} (a single step: the median of the analysis steps)") if step is not None else "The whole trace (no steps)"
    head = f"{what}: {fmt_duration(total)} along its critical path" + (f", replayed within {err:.1f}%" if err is not None else "")
    notes = "".join(f"<li>{escape(x)}</li>" for x in sm.get("replay_notes") or [])
    out = [f"<h3>What bounds the step</h3><p>{escape(head)}.</p>" + (f"<ul class=mut>{notes}</ul>" if notes else "")]
    if sm.get("ranks"):
        from perflint.report.summary_text import ranks_line

        out.append(f"<p>Ranks: {escape(ranks_line(sm['ranks']))}.</p>")
        out.append(_rank_lanes(sm["ranks"].get("lanes"), colour.get("comm_wait", 0)))
    bar = svg.shares("what bounds the median step", [(b["label"], b["pct"], colour[b["category"]]) for b in bound])
    out.append(figure(bar, "the median step's time along its critical path, by category",
                      table([("category", False), ("time", True), ("% of the step", True)], [[t(x["label"]), d(x["us"]), n(x["pct"], "%")] for x in bound])))
    path = sm.get("critical_path") or []
    if path:
        lo, hi = sm.get("critical_path_span_us") or (path[0]["start_us"], path[-1]["end_us"])
        busy = [(x["lane"], x["busy"]) for x in sm.get("lanes") or []]
        chart = svg.lanes("the median step's critical path over its lanes", lo, hi, busy,
                          [(r["lane"], r["start_us"], r["end_us"], svg.short(r["name"], 60), colour.get(r["category"], 0)) for r in path])
        from perflint.stepmodel.critical import LABELS

        rows = [[t(r["lane"]), d(r["start_us"] - lo), d(r["end_us"] - r["start_us"]), t(LABELS.get(r["category"], r["category"])), code(r["name"])] for r in path]
        more = sm.get("critical_path_runs") or len(path)
        shown = f" (its {len(path)} longest runs of {more})" if more > len(path) else ""
        out.append(figure(chart, f"critical path of the median step{shown} (coloured, replayed times) over what ran on each CPU thread and GPU stream (grey)",
                          table([("lane", False), ("start", True), ("time", True), ("mostly", False), ("longest piece", False)], rows)))
    wi = sm.get("what_if_all") or {}
    if wi.get("what_ifs"):
        per = wi.get("per", "step")
        rows = [[(f'<span class=nw>{escape(w["code"])}</span>', None), code(w["message"], 110), t(w["change"]), d(w["saving_per_step_us"]), d(w["predicted_step_us"])]
                for w in wi["what_ifs"]]
        rows.append([t("all"), t(f"{len(wi['what_ifs'])} fixes together"), t(""), d(wi["step_us"] - wi["predicted_step_us"]), d(wi["predicted_step_us"])])
        out.append(f"<h3>What if it were fixed</h3><p>The median {per} ({fmt_duration(wi['step_us'])}) replayed with each finding's fix, "
                   f"then with all of them together: {fmt_duration(wi['predicted_step_us'])} ({-wi['saving_pct']:+.0f}%).</p>"
                   + table([("finding", False), ("message", False), ("fix changes", False), (f"saves per {per}", True),
                            (f"predicted {per}", True)], rows))  # fmt: skip
    return "".join(out)


def roofline_block(p: dict[str, Any]) -> str:
    """The op groups' achieved FLOP/s against their arithmetic intensity under the device's roofs,
    with the table of the same numbers."""
    r = p.get("roofline") or {}
    if not r.get("points"):
        return f'<h3>Roofline</h3><p class=mut>Not drawn: {escape(r.get("why") or "no data")}.</p>'
    pts = r["points"]
    chart = svg.roofline(f"roofline of the top ops on {r['device']}", r["roofs"], r["bandwidth_gbps"],
                         [(q["name"], q["intensity"], q["tflops"]) for q in pts])  # fmt: skip
    rows = [[n(float(k), nd=0), code(q["name"]), d(q["device_us"]), n(q["intensity"], nd=2), n(q["tflops"], nd=3),
             n(q["pct_of_peak"], "%"), t(q["bound"])] for k, q in enumerate(pts, 1)]  # fmt: skip
    roofs = ", ".join(f"{label} {pk:g} TFLOP/s" for label, pk in r["roofs"])
    note = (f"<p class=mut>{escape(r['device'])}: memory {r['bandwidth_gbps']:g} GB/s, {escape(roofs)} (dense peaks; "
            f"source: {escape(r['source'])}). FLOPs and bytes from the op models; % of peak is of the roof that binds "
            "each op's kernels.</p>")  # fmt: skip
    # The numbers' key stays open beside the chart: points that share a spot share a label.
    key = "".join(f'<li value="{k}"><code title="{escape(q["name"])}">{escape(svg.short(q["name"], 90))}</code> '
                  f'<span class=mut>{escape(fmt_duration(q["device_us"]))}</span></li>' for k, q in enumerate(pts, 1))
    return "<h3>Roofline</h3><div class=rl>" + figure(chart, "achieved TFLOP/s and arithmetic intensity of the ops with most device time", table(
        [("#", True), ("op", False), ("device total", True), ("FLOP/byte", True), ("TFLOP/s", True), ("% of peak", True), ("bound", False)],
        rows)) + f'<ol class="key">{key}</ol></div>' + note  # fmt: skip


def trace_section(p: dict[str, Any], alpha: float = 0.05) -> str:
    label = p["path"] + (f" [rank {p['rank']}]" if p.get("rank") is not None else "")
    warns = "".join(f"<li>{escape(w)}</li>" for w in p.get("warnings") or [])
    return (
        f'<section class="trace"><h2>{escape(label)}</h2>' + gpu_cards(p)
        + (f"<details><summary>{plural(len(p['warnings']), 'warning')}</summary><ul>{warns}</ul></details>" if warns else "")
        + step_model_block(p) + breakdown_block(p) + timeline_block(p)
        + category_block(p) + roofline_block(p)
        + kernels_block(p) + kernel_view_block(p) + ops_block(p) + comparison_block(p.get("baseline"), alpha) + "</section>"
    )


def _median(v: Sequence[float]) -> float | None:
    s = sorted(v)
    if not s:
        return None
    m = len(s) // 2
    return s[m] if len(s) % 2 else (s[m - 1] + s[m]) / 2


def ranks_block(panels: list[dict[str, Any]], findings_per: dict[str, int] | None = None) -> str:
    """Step time per trace (rank): a strip plot and the per-rank aggregates."""
    if len(panels) < 2:
        return ""
    labels = distinct_labels([(p["path"], p.get("rank")) for p in panels])
    groups = [(label, p["steps"]["durs_us"]) for label, p in zip(labels, panels)]
    chart = svg.strips("step time per trace", groups)
    rows = []
    for label, p in zip(labels, panels):
        durs = p["steps"]["durs_us"]
        rows.append([(f'<span title="{escape(p["path"])}">{escape(label)}</span>', None), n(len(durs), nd=0), d(_median(durs)), d(max(durs) if durs else None),
                     n((p.get("gpu") or {}).get("utilization_pct"), "%"), n((findings_per or {}).get(_key(p), 0), nd=0)])
    tab = table([("trace", False), ("steps", True), ("median step", True), ("max step", True),
                 ("GPU util", True), ("findings", True)], rows)
    return "<h2>Step time per trace</h2>" + figure(chart, "step time per trace: each trace's analysis steps (edge steps left out unless --include-edge-steps)", tab)


def _key(p: dict[str, Any]) -> str:
    return f"{p['path']}\0{p.get('rank')}"


def detailed(panels: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """The traces that get a full section, and a note on the ones left out."""
    ranks = [p for p in panels if p.get("rank") is not None]
    if len(ranks) > MAX_RANK_DETAILS:
        by_time = sorted(panels, key=lambda p: _median(p["steps"]["durs_us"]) or 0.0)
        keep = by_time[-(MAX_RANK_DETAILS // 2):] + by_time[: MAX_RANK_DETAILS // 2]
        keep_ids = {id(p) for p in keep}
        return ([p for p in panels if id(p) in keep_ids],
                f"{len(panels)} traces: sections for the {MAX_RANK_DETAILS // 2} slowest and fastest by median step; "
                "every rank is in the table above.")
    if len(panels) > MAX_TRACE_DETAILS:
        return panels[:MAX_TRACE_DETAILS], f"sections for the first {MAX_TRACE_DETAILS} of {len(panels)} traces."
    return panels, ""


def traces_part(panels: list[dict[str, Any]], findings_per: dict[str, int] | None = None, alpha: float = 0.05) -> list[str]:
    body = [ranks_block(panels, findings_per)]
    shown, note = detailed(panels)
    if note:
        body.append(f"<p class=mut>{escape(note)}</p>")
    body += [trace_section(p, alpha) for p in shown]
    return body
