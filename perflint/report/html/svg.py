"""Inline SVG charts: horizontal bars, stacked bars, an area series, a box/strip plot and a
log-log roofline.

Each chart scales with its container (viewBox, width 100%); colours come from CSS classes
(`s0`..`s7`, `ink`, `grid`), so the page's light and dark schemes apply to them. Every chart has a
<title> and the page puts a table with the same numbers behind it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape

from perflint.units import fmt_duration, fmt_size

W = 600  # viewBox width; the SVG is drawn at the container's width
CHAR = 0.62  # a conservative glyph width per px of font size: labels are sized by it to fit


def _f(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


def _svg(height: float, title: str, body: list[str], kind: str) -> str:
    return (
        f'<svg class="chart {kind}" viewBox="0 0 {W} {_f(height)}" role="img" preserveAspectRatio="xMinYMin meet">'
        f"<title>{escape(title)}</title>{''.join(body)}</svg>"
    )


def short(label: str, n: int = 38) -> str:
    return label if len(label) <= n else label[: n - 1] + "\u2026"


def text_w(text: str, font: float = 12.0) -> float:
    """The width a label can take in viewBox units (an overestimate, so placed labels never meet)."""
    return len(text) * font * CHAR


def fit(label: str, width: float, font: float = 12.0) -> str:
    """`label` shortened to fit `width` viewBox units, its middle cut: the ends tell labels apart
    ("sampled_rank-0.json.gz [rank 0]" keeps its rank)."""
    n = max(4, int(width / (font * CHAR)))
    if len(label) <= n:
        return label
    head = (n - 1) // 2
    return label[:head] + "\u2026" + label[len(label) - (n - 1 - head):]


def value(x: float, unit: str) -> str:
    """A value with its unit as a person reads it: µs/ms/s for "us", KB/MB/GB for "B"."""
    if x == 0:
        return "0"
    if unit == "us":
        return fmt_duration(x)
    if unit == "B":
        return fmt_size(x)
    if unit == "%":
        return f"{x:.0f}%" if abs(x) >= 10 or x == 0 else f"{x:.1f}%"
    return num(x) + (f" {unit}" if unit else "")


def hbars(title: str, rows: Sequence[tuple[str, float]], unit: str = "us") -> str:
    """One bar per (label, value), longest first as given; the value printed beside it."""
    bar_h, gap, left = 18, 6, 200
    top = max((v for _, v in rows), default=0.0) or 1.0
    h = len(rows) * (bar_h + gap) + gap
    body = []
    for i, (label, v) in enumerate(rows):
        y = gap + i * (bar_h + gap)
        w = max(0.0, (W - left - 90) * v / top)
        shown = value(v, unit)
        body.append(
            f'<text class="ink" x="{left - 6}" y="{y + 13}" text-anchor="end">{escape(fit(label, left - 10))}</text>'
            f'<rect class="s{i % 8}" x="{left}" y="{y}" width="{_f(w)}" height="{bar_h}"><title>{escape(label)}: '
            f"{escape(shown)}</title></rect>"
            f'<text class="ink" x="{_f(left + w + 4)}" y="{y + 13}">{escape(shown)}</text>'
        )
    return _svg(h, title, body, "hbars")


def stacked(title: str, labels: Sequence[str], parts: Sequence[str], values: Sequence[Sequence[float]], unit: str = "us") -> str:
    """One vertical bar per label, stacked by part (values[i][j]: bar i, part j), with a legend."""
    left, right, top_pad = 64, 8, 8
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
                    f"<title>step {escape(label)}, {escape(parts[j])}: {escape(value(v, unit))}</title></rect>"
                )
    # Step numbers below the bars, as many as fit side by side.
    widest = max((text_w(x, 10) for x in labels), default=10.0) + 6
    step = max(1, int(-(-n * widest // (W - left - right))))
    for i in range(0, n, step):
        x = left + i * slot + slot / 2
        body.append(f'<text class="ink small" x="{_f(x)}" y="{top_pad + plot_h + 14}" text-anchor="middle">{escape(labels[i])}</text>')
    legend, rows = _legend_at(list(parts), list(range(len(parts))), left, top_pad + plot_h + 24, 100)
    body.append(legend)
    return _svg(top_pad + plot_h + 24 + 14 * rows + 4, title, body, "stacked")


def _yaxis(left: float, top_pad: float, plot_h: float, top: float, unit: str) -> str:
    out = []
    for k in range(5):
        v = top * k / 4
        y = top_pad + plot_h - plot_h * k / 4
        out.append(f'<line class="grid" x1="{left}" x2="{W - 8}" y1="{_f(y)}" y2="{_f(y)}"/>'
                   f'<text class="ink small" x="{left - 4}" y="{_f(y + 4)}" text-anchor="end">{escape(value(v, unit))}</text>')
    return "".join(out)


def num(x: float) -> str:
    """A unitless number, short: 1.5k, 2M, 0.05 (no trailing ".0")."""
    ax = abs(x)
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if ax >= scale:
            return _f(x / scale) + suffix
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
                    f"{escape(value(n * bucket_us, 'us'))}</text>")
    return _svg(top_pad + plot_h + 20, title, body, "area")


def strips(title: str, groups: Sequence[tuple[str, Sequence[float]]], unit: str = "us") -> str:
    """Per group a box (quartiles, median) and its samples as dots, on one shared axis; the median
    and quartiles labelled under each box where they do not collide, the axis at min and max."""
    left, row_h, top_pad, font = 190, 38, 6, 10.0
    vals = [v for _, g in groups for v in g]
    lo, hi = (min(vals), max(vals)) if vals else (0.0, 1.0)
    if hi <= lo:
        lo, hi = lo - 1.0, hi + 1.0
    span = W - left - 16

    def x(v: float) -> float:
        return left + span * (v - lo) / (hi - lo)

    body = []
    for i, (label, g) in enumerate(groups):
        y = top_pad + i * row_h + 12
        body.append(f'<text class="ink" x="{left - 6}" y="{_f(y + 4)}" text-anchor="end">{escape(fit(label, left - 10))}</text>')
        if not g:
            continue
        q1, med, q3 = _quartiles(sorted(g))
        body.append(f'<rect class="box" x="{_f(x(q1))}" y="{_f(y - 8)}" width="{_f(max(1.0, x(q3) - x(q1)))}" height="16"/>'
                    f'<line class="med" x1="{_f(x(med))}" x2="{_f(x(med))}" y1="{_f(y - 9)}" y2="{_f(y + 9)}"/>')
        for v in g:
            body.append(f'<circle class="dot s{i % 8}" cx="{_f(x(v))}" cy="{_f(y)}" r="2.5"/>')
        body += _spaced([(med, "median "), (q1, "Q1 "), (q3, "Q3 ")], x, unit, y + 21, font, left, W - 4)
    ay = top_pad + len(groups) * row_h + 4
    body += _spaced([(lo, "min "), (hi, "max ")], x, unit, ay + 10, font, left, W - 4)
    return _svg(ay + 16, title, body, "strips")


def _spaced(marks: Sequence[tuple[float, str]], pos: Callable[[float], float], unit: str, y: float, font: float, lo: float, hi: float) -> list[str]:
    """Value labels centred under their marks, in the order given (most important first), each
    kept only where it meets no label already placed and stays within [lo, hi]."""
    placed: list[tuple[float, float]] = []
    out = []
    for v, prefix in marks:
        text = prefix + value(v, unit)
        w = text_w(text, font)
        a = min(max(pos(v) - w / 2, lo), hi - w)
        if a < lo or any(a < b1 + 4 and b0 < a + w + 4 for b0, b1 in placed):
            continue
        placed.append((a, a + w))
        out.append(f'<text class="ink small" x="{_f(a)}" y="{_f(y)}">{escape(text)}</text>')
    return out


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
    widest = max(text_w(num(10.0**e)) for e in range(x0, x1 + 1)) + 6
    every_x = max(1, int(-(-widest // (pw / max(1, x1 - x0)))))  # decades per x label, so labels never meet
    for e in range(x0, x1 + 1):
        if (e - x0) % every_x:
            continue
        body.append(f'<line class="grid" x1="{_f(px(10.0**e))}" x2="{_f(px(10.0**e))}" y1="{top_pad}" y2="{top_pad + plot_h}"/>'
                    f'<text class="ink" x="{_f(px(10.0**e))}" y="{top_pad + plot_h + 14}" text-anchor="middle">{num(10.0**e)}</text>')
    every = max(1, int(-(-14 // max(1.0, plot_h / max(1, y1 - y0)))))  # decades per y label: 14 units apart at least
    for e in range(y0, y1 + 1):
        if (y1 - e) % every or e == y0:  # the bottom label would meet the x axis's first one
            continue
        body.append(f'<line class="grid" x1="{left}" x2="{left + pw}" y1="{_f(py(10.0**e))}" y2="{_f(py(10.0**e))}"/>'
                    f'<text class="ink" x="{left - 4}" y="{_f(py(10.0**e) + 4)}" text-anchor="end">{num(10.0**e)}</text>')
    body.append(f'<text class="ink" x="{left + pw / 2}" y="{top_pad + plot_h + 30}" text-anchor="middle">FLOP per byte</text>'
                f'<text class="ink" x="{left + 4}" y="{top_pad + 12}">TFLOP/s</text>')
    lo, hi = 10.0**x0, 10.0**x1
    taken = [(left + 4.0, top_pad + 2.0, text_w("TFLOP/s"), 12.0)]  # label boxes placed so far
    for i, (label, pk) in enumerate(roofs):
        ridge = pk * 1e3 / bandwidth_gbps
        a = max(lo, min(hi, 10.0**y0 * 1e3 / bandwidth_gbps))
        pts = [(a, a * bandwidth_gbps / 1e3), (ridge, pk), (hi, pk)]
        path = " ".join(f"{_f(px(x))},{_f(py(y))}" for x, y in pts if lo <= x <= hi)
        text = fit(label, right - 8, 10)
        ty = py(pk) + 4
        while any(_meets((left + pw + 4, ty - 9, text_w(text, 10), 11), b) for b in taken):
            ty += 12
        taken.append((left + pw + 4, ty - 9, text_w(text, 10), 11))
        body.append(f'<polyline class="roof s{i % 8}" fill="none" points="{path}"><title>{escape(label)}: {num(pk)} TFLOP/s, '
                    f"ridge at {num(ridge)} FLOP/byte</title></polyline>"
                    f'<text class="ink small" x="{left + pw + 4}" y="{_f(ty)}">{escape(text)}</text>')
    # Points closer than a label apart share one label ("5,7,8"); each label goes to the first
    # free spot around its points, joined to them by a leader line when set apart.
    clusters: list[list[tuple[int, float, float]]] = []
    for k, (label, x, y) in enumerate(points, 1):
        if x <= 0 or y <= 0:
            continue
        cx, cy = px(x), py(y)
        body.append(f'<circle class="s{(k - 1) % 8}" cx="{_f(cx)}" cy="{_f(cy)}" r="4"><title>{k}. {escape(label)}: '
                    f"{num(x)} FLOP/byte, {num(y)} TFLOP/s</title></circle>")
        near = next((c for c in clusters if any(abs(cx - a) < 12 and abs(cy - b) < 12 for _, a, b in c)), None)
        if near is None:
            clusters.append([(k, cx, cy)])
        else:
            near.append((k, cx, cy))
    dots = [(a - 4, b - 4, 8.0, 8.0) for c in clusters for _, a, b in c]
    for c in clusters:
        text = ",".join(str(k) for k, _, _ in c)
        w, h = text_w(text, 10), 11.0
        ax, ay = sum(a for _, a, _ in c) / len(c), sum(b for _, _, b in c) / len(c)
        spot = None
        for dist in (7.0, 16.0, 28.0, 42.0, 60.0):
            for dx, dy in ((1, -1), (1, 1), (-1, -1), (-1, 1), (0, -1), (0, 1), (1, 0), (-1, 0)):
                bx = ax + dx * dist + (0 if dx > 0 else -w if dx < 0 else -w / 2)
                by = ay + dy * dist + (0 if dy > 0 else -h if dy < 0 else -h / 2)
                box = (bx, by, w, h)
                inside = left <= bx and bx + w <= left + pw and top_pad <= by and by + h <= top_pad + plot_h
                if inside and not any(_meets(box, b) for b in taken + dots):
                    spot = box
                    break
            if spot:
                break
        if spot is None:
            continue  # the legend beside the chart still names the point
        taken.append(spot)
        bx, by, _, _ = spot
        if abs(bx + w / 2 - ax) > 14 or abs(by + h / 2 - ay) > 14:
            body.append(f'<line class="link" x1="{_f(ax)}" y1="{_f(ay)}" x2="{_f(bx + w / 2)}" y2="{_f(by + h / 2)}"/>')
        body.append(f'<text class="ink small" x="{_f(bx)}" y="{_f(by + 9)}">{escape(text)}</text>')
    return _svg(top_pad + plot_h + bottom + 6, title, body, "roofline")


def _meets(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    """Whether two (x, y, width, height) boxes overlap."""
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


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
    legend, rows = _legend_at([f"{label} {pct:.0f}%" for label, pct, _ in parts], [c for _, _, c in parts], left, 4 + bar_h + 10)
    body.append(legend)
    return _svg(4 + bar_h + 10 + 14 * rows + 4, title, body, "shares")


def _legend_at(texts: Sequence[str], colours: Sequence[int], left: float, y: float, width: float = 195) -> tuple[str, int]:
    """Legend entries `width` apart, wrapping onto new rows; the markup and how many rows it took."""
    out = []
    x, rows = left, 1
    for text, c in zip(texts, colours):
        if x + width > W:
            x, y, rows = left, y + 14, rows + 1
        out.append(f'<rect class="s{c % 8}" x="{_f(x)}" y="{_f(y)}" width="10" height="10"/>'
                   f'<text class="ink small" x="{_f(x + 14)}" y="{_f(y + 9)}">{escape(fit(text, width - 18, 10))}</text>')
        x += width
    return "".join(out), rows


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
        body.append(f'<text class="ink small" x="{left - 6}" y="{_f(y + row_h / 2 + 3)}" text-anchor="end">{escape(fit(name, left - 10, 10))}</text>'
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
                    f"<title>{escape(name)}: {escape(label)}, {escape(value(b - a, 'us'))}</title></rect>")
        if w > 60:
            body.append(f'<text class="ink small" x="{_f(x(a) + 3)}" y="{_f(y + row_h / 2)}">{escape(fit(label, w - 6, 10))}</text>')
        prev = (x(a) + w, y + (row_h - 8) / 2)
    ay = top_pad + len(names) * row_h + 2
    body.append(f'<text class="ink small" x="{left}" y="{_f(ay + 10)}">0</text>'
                f'<text class="ink small" x="{W - 8}" y="{_f(ay + 10)}" text-anchor="end">{escape(value(hi - lo, "us"))}</text>')
    return _svg(ay + 16, title, body, "lanes")
