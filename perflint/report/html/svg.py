"""Inline SVG charts: horizontal bars, stacked bars, an area series, a box/strip plot and a
log-log roofline.

Each chart scales with its container (viewBox, width 100%); colours come from CSS classes
(`s0`..`s7`, `ink`, `grid`), so the page's light and dark schemes apply to them. Every chart has a
<title> and the page puts a table with the same numbers behind it.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

W = 600  # viewBox width; the SVG is drawn at the container's width


def _f(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


def _svg(height: float, title: str, body: list[str], kind: str) -> str:
    return (
        f'<svg class="chart {kind}" viewBox="0 0 {W} {_f(height)}" role="img" preserveAspectRatio="xMinYMin meet">'
        f"<title>{escape(title)}</title>{''.join(body)}</svg>"
    )


def short(label: str, n: int = 38) -> str:
    return label if len(label) <= n else label[: n - 1] + "\u2026"


def hbars(title: str, rows: Sequence[tuple[str, float]], fmt: str = "{:.1f}", unit: str = "") -> str:
    """One bar per (label, value), longest first as given; the value printed beside it."""
    bar_h, gap, left = 18, 6, 200
    top = max((v for _, v in rows), default=0.0) or 1.0
    h = len(rows) * (bar_h + gap) + gap
    body = []
    for i, (label, v) in enumerate(rows):
        y = gap + i * (bar_h + gap)
        w = max(0.0, (W - left - 90) * v / top)
        body.append(
            f'<text class="ink" x="{left - 6}" y="{y + 13}" text-anchor="end">{escape(short(label, 30))}</text>'
            f'<rect class="s{i % 8}" x="{left}" y="{y}" width="{_f(w)}" height="{bar_h}"><title>{escape(label)}: '
            f"{escape(fmt.format(v))}{unit}</title></rect>"
            f'<text class="ink" x="{_f(left + w + 4)}" y="{y + 13}">{escape(fmt.format(v))}{unit}</text>'
        )
    return _svg(h, title, body, "hbars")


def stacked(title: str, labels: Sequence[str], parts: Sequence[str], values: Sequence[Sequence[float]], unit: str = "us") -> str:
    """One vertical bar per label, stacked by part (values[i][j]: bar i, part j), with a legend."""
    left, right, top_pad, bottom = 56, 8, 8, 40
    plot_h = 200
    n = max(1, len(labels))
    top = max((sum(v) for v in values), default=0.0) or 1.0
    slot = (W - left - right) / n
    bw = max(1.0, slot * 0.8)
    body = [_yaxis(left, top_pad, plot_h, top, unit)]
    for i, (label, vals) in enumerate(zip(labels, values)):
        x = left + i * slot + (slot - bw) / 2
        y: float = top_pad + plot_h
        for j, v in enumerate(vals):
            hgt = plot_h * v / top
            y -= hgt
            if hgt > 0:
                body.append(
                    f'<rect class="s{j % 8}" x="{_f(x)}" y="{_f(y)}" width="{_f(bw)}" height="{_f(hgt)}">'
                    f"<title>step {escape(label)}, {escape(parts[j])}: {_f(v)} {unit}</title></rect>"
                )
    step = max(1, n // 10)
    for i in range(0, n, step):
        x = left + i * slot + slot / 2
        body.append(f'<text class="ink small" x="{_f(x)}" y="{top_pad + plot_h + 14}" text-anchor="middle">{escape(labels[i])}</text>')
    body.append(_legend(parts, top_pad + plot_h + 24))
    rows = 1 + (len(parts) - 1) // max(1, int((W - 56) // 100))
    return _svg(top_pad + plot_h + bottom + 14 * (rows - 1), title, body, "stacked")


def _legend(parts: Sequence[str], y: float) -> str:
    out = []
    x = 56.0
    for j, p in enumerate(parts):
        if x + 100 > W:
            x, y = 56.0, y + 14
        out.append(f'<rect class="s{j % 8}" x="{_f(x)}" y="{_f(y)}" width="10" height="10"/>'
                   f'<text class="ink small" x="{_f(x + 14)}" y="{_f(y + 9)}">{escape(p)}</text>')
        x += 100
    return "".join(out)


def _yaxis(left: float, top_pad: float, plot_h: float, top: float, unit: str) -> str:
    out = []
    for k in range(5):
        v = top * k / 4
        y = top_pad + plot_h - plot_h * k / 4
        out.append(f'<line class="grid" x1="{left}" x2="{W - 8}" y1="{_f(y)}" y2="{_f(y)}"/>'
                   f'<text class="ink small" x="{left - 4}" y="{_f(y + 4)}" text-anchor="end">{escape(num(v))}{escape(unit) if k == 4 else ""}</text>')
    return "".join(out)


def num(x: float) -> str:
    ax = abs(x)
    if ax >= 1e9:
        return f"{x / 1e9:.1f}G"
    if ax >= 1e6:
        return f"{x / 1e6:.1f}M"
    if ax >= 1e3:
        return f"{x / 1e3:.1f}k"
    return f"{x:.0f}" if ax >= 10 else f"{x:.2g}"


def area(title: str, values: Sequence[float], bucket_us: float) -> str:
    """A 0..100 % series (fractions in `values`), one point per time bucket."""
    left, top_pad, plot_h = 56, 8, 140
    n = len(values)
    body = [_yaxis(left, top_pad, plot_h, 100.0, "%")]
    if n:
        dx = (W - left - 8) / max(1, n)
        pts = [f"{_f(left)},{_f(top_pad + plot_h)}"]
        for i, v in enumerate(values):
            y = top_pad + plot_h - plot_h * min(max(v, 0.0), 1.0)
            pts += [f"{_f(left + i * dx)},{_f(y)}", f"{_f(left + (i + 1) * dx)},{_f(y)}"]
        pts.append(f"{_f(left + n * dx)},{_f(top_pad + plot_h)}")
        body.append(f'<polygon class="area s0" points="{" ".join(pts)}"/>')
        body.append(f'<text class="ink small" x="{left}" y="{top_pad + plot_h + 14}">0</text>'
                    f'<text class="ink small" x="{W - 8}" y="{top_pad + plot_h + 14}" text-anchor="end">'
                    f"{escape(num(n * bucket_us))}us</text>")
    return _svg(top_pad + plot_h + 20, title, body, "area")


def strips(title: str, groups: Sequence[tuple[str, Sequence[float]]], unit: str = "us") -> str:
    """Per group a box (quartiles, median) and its samples as dots, on one shared axis."""
    left, row_h, top_pad = 190, 24, 6
    vals = [v for _, g in groups for v in g]
    lo, hi = (min(vals), max(vals)) if vals else (0.0, 1.0)
    if hi <= lo:
        lo, hi = lo - 1.0, hi + 1.0
    span = W - left - 16

    def x(v: float) -> float:
        return left + span * (v - lo) / (hi - lo)

    body = []
    for i, (label, g) in enumerate(groups):
        y = top_pad + i * row_h + row_h / 2
        body.append(f'<text class="ink" x="{left - 6}" y="{_f(y + 4)}" text-anchor="end">{escape(short(label, 26))}</text>')
        if not g:
            continue
        q1, med, q3 = _quartiles(sorted(g))
        body.append(f'<rect class="box" x="{_f(x(q1))}" y="{_f(y - 8)}" width="{_f(max(1.0, x(q3) - x(q1)))}" height="16"/>'
                    f'<line class="med" x1="{_f(x(med))}" x2="{_f(x(med))}" y1="{_f(y - 9)}" y2="{_f(y + 9)}"/>')
        for v in g:
            body.append(f'<circle class="dot s{i % 8}" cx="{_f(x(v))}" cy="{_f(y)}" r="2.5"/>')
    ay = top_pad + len(groups) * row_h + 4
    body.append(f'<text class="ink small" x="{left}" y="{_f(ay + 10)}">{escape(num(lo))}{unit}</text>'
                f'<text class="ink small" x="{W - 16}" y="{_f(ay + 10)}" text-anchor="end">{escape(num(hi))}{unit}</text>')
    return _svg(ay + 16, title, body, "strips")


def _quartiles(s: Sequence[float]) -> tuple[float, float, float]:
    def q(p: float) -> float:
        k = (len(s) - 1) * p
        i = int(k)
        return s[i] + (s[min(i + 1, len(s) - 1)] - s[i]) * (k - i)

    return q(0.25), q(0.5), q(0.75)


def roofline(title: str, roofs: Sequence[tuple[str, float]], bandwidth_gbps: float, points: Sequence[tuple[str, float, float]]) -> str:
    """Achieved TFLOP/s against arithmetic intensity (FLOP/byte), both on log scales: each compute
    roof (label, TFLOP/s) meets the memory roof (bandwidth x intensity) at its ridge point; one
    numbered dot per (label, intensity, TFLOP/s)."""
    import math

    left, right, top_pad, bottom, plot_h = 56, 150, 10, 34, 220
    pw = W - left - right
    xs = [p[1] for p in points if p[1] > 0] + [pk * 1e3 / bandwidth_gbps for _, pk in roofs]
    ys = [p[2] for p in points if p[2] > 0] + [pk for _, pk in roofs]
    x0, x1 = math.floor(math.log10(min(xs) / 2)), math.ceil(math.log10(max(xs) * 2))
    y0, y1 = math.floor(math.log10(min(ys) / 2)), math.ceil(math.log10(max(ys) * 2))

    def px(v: float) -> float:
        return left + pw * (math.log10(v) - x0) / (x1 - x0)

    def py(v: float) -> float:
        return top_pad + plot_h * (1 - (math.log10(v) - y0) / (y1 - y0))

    body = []
    for e in range(x0, x1 + 1):
        body.append(f'<line class="grid" x1="{_f(px(10.0**e))}" x2="{_f(px(10.0**e))}" y1="{top_pad}" y2="{top_pad + plot_h}"/>'
                    f'<text class="ink" x="{_f(px(10.0**e))}" y="{top_pad + plot_h + 14}" text-anchor="middle">{num(10.0**e)}</text>')
    for e in range(y0, y1 + 1):
        body.append(f'<line class="grid" x1="{left}" x2="{left + pw}" y1="{_f(py(10.0**e))}" y2="{_f(py(10.0**e))}"/>'
                    f'<text class="ink" x="{left - 4}" y="{_f(py(10.0**e) + 4)}" text-anchor="end">{num(10.0**e)}</text>')
    body.append(f'<text class="ink" x="{left + pw / 2}" y="{top_pad + plot_h + 30}" text-anchor="middle">FLOP per byte</text>'
                f'<text class="ink" x="{left + 4}" y="{top_pad + 12}">TFLOP/s</text>')
    lo, hi = 10.0**x0, 10.0**x1
    for i, (label, pk) in enumerate(roofs):
        ridge = pk * 1e3 / bandwidth_gbps
        a = max(lo, min(hi, 10.0**y0 * 1e3 / bandwidth_gbps))
        pts = [(a, a * bandwidth_gbps / 1e3), (ridge, pk), (hi, pk)]
        path = " ".join(f"{_f(px(x))},{_f(py(y))}" for x, y in pts if lo <= x <= hi)
        body.append(f'<polyline class="roof s{i % 8}" fill="none" points="{path}"><title>{escape(label)}: {num(pk)} TFLOP/s, '
                    f"ridge at {num(ridge)} FLOP/byte</title></polyline>"
                    f'<text class="ink" x="{left + pw + 4}" y="{_f(py(pk) + 4)}">{escape(short(label, 24))}</text>')
    for k, (label, x, y) in enumerate(points, 1):
        if x <= 0 or y <= 0:
            continue
        body.append(f'<circle class="s{(k - 1) % 8}" cx="{_f(px(x))}" cy="{_f(py(y))}" r="4"><title>{k}. {escape(label)}: '
                    f"{num(x)} FLOP/byte, {num(y)} TFLOP/s</title></circle>"
                    f'<text class="ink" x="{_f(px(x) + 6)}" y="{_f(py(y) - 4)}">{k}</text>')
    return _svg(top_pad + plot_h + bottom + 6, title, body, "roofline")


def shares(title: str, parts: Sequence[tuple[str, float, int]]) -> str:
    """One horizontal bar split into (label, share %, colour index) parts, with a legend."""
    left, bar_h = 8, 26
    body, x = [], float(left)
    span = W - 2 * left
    for label, pct, c in parts:
        w = span * pct / 100.0
        if w <= 0:
            continue
        body.append(f'<rect class="s{c % 8}" x="{_f(x)}" y="4" width="{_f(w)}" height="{bar_h}"><title>{escape(label)}: {pct:.1f}%</title></rect>')
        if w > 44:
            body.append(f'<text class="ink small" x="{_f(x + 3)}" y="{4 + bar_h / 2 + 4}">{pct:.0f}%</text>')
        x += w
    legend = [f"{label} {pct:.0f}%" for label, pct, _ in parts]
    body.append(_legend_at(legend, [c for _, _, c in parts], left, 4 + bar_h + 10))
    rows = 1 + (len(parts) - 1) // max(1, int((W - left) // 195))
    return _svg(4 + bar_h + 10 + 14 * rows + 4, title, body, "shares")


def _legend_at(texts: Sequence[str], colours: Sequence[int], left: float, y: float, width: float = 195) -> str:
    out = []
    x = left
    for text, c in zip(texts, colours):
        if x + width > W:
            x, y = left, y + 14
        out.append(f'<rect class="s{c % 8}" x="{_f(x)}" y="{_f(y)}" width="10" height="10"/>'
                   f'<text class="ink small" x="{_f(x + 14)}" y="{_f(y + 9)}">{escape(short(text, 34))}</text>')
        x += width
    return "".join(out)


def lanes(
    title: str, lo: float, hi: float, busy: Sequence[tuple[str, Sequence[Sequence[float]]]],
    path: Sequence[tuple[str, float, float, str, int]],
) -> str:  # fmt: skip
    """A step as lanes (CPU threads, GPU streams) from `lo` to `hi`: each lane's busy time in grey,
    the critical path's (lane, start, end, label, colour index) pieces over it in colour, named
    where they are wide enough, and joined from one lane to the next."""
    left, row_h, top_pad = 130, 26, 4
    names = list(dict.fromkeys([name for name, _ in busy] + [p[0] for p in path]))
    row = {name: i for i, name in enumerate(names)}
    span = W - left - 8
    scale = span / (hi - lo) if hi > lo else 0.0

    def x(v: float) -> float:
        return left + (min(max(v, lo), hi) - lo) * scale

    body = []
    for name, i in row.items():
        y = top_pad + i * row_h
        body.append(f'<text class="ink small" x="{left - 6}" y="{_f(y + row_h / 2 + 3)}" text-anchor="end">{escape(short(name, 22))}</text>'
                    f'<line class="grid" x1="{left}" x2="{W - 8}" y1="{_f(y + row_h - 2)}" y2="{_f(y + row_h - 2)}"/>')
    for name, ivs in busy:
        y = top_pad + row[name] * row_h + 8
        for a, b in ivs:
            body.append(f'<rect class="busy" x="{_f(x(a))}" y="{_f(y)}" width="{_f(max(0.5, x(b) - x(a)))}" height="{row_h - 18}"/>')
    prev: tuple[float, float] | None = None
    for name, a, b, label, c in path:
        y = top_pad + row[name] * row_h + 3
        w = max(1.0, x(b) - x(a))
        if prev is not None:
            body.append(f'<line class="link" x1="{_f(prev[0])}" x2="{_f(x(a))}" y1="{_f(prev[1])}" y2="{_f(y + (row_h - 8) / 2)}"/>')
        body.append(f'<rect class="s{c % 8} crit" x="{_f(x(a))}" y="{_f(y)}" width="{_f(w)}" height="{row_h - 8}">'
                    f"<title>{escape(name)}: {escape(label)}, {num(b - a)}us</title></rect>")
        if w > 60:
            body.append(f'<text class="ink small" x="{_f(x(a) + 3)}" y="{_f(y + row_h / 2)}">{escape(short(label, int(w / 6)))}</text>')
        prev = (x(a) + w, y + (row_h - 8) / 2)
    ay = top_pad + len(names) * row_h + 2
    body.append(f'<text class="ink small" x="{left}" y="{_f(ay + 10)}">0</text>'
                f'<text class="ink small" x="{W - 8}" y="{_f(ay + 10)}" text-anchor="end">{escape(num(hi - lo))}us</text>')
    return _svg(ay + 16, title, body, "lanes")
