"""Hand-drawn SVG on purpose, no charting library: pages must work without JavaScript (Plotly, Vega need it).

Charts as inline SVG, drawn on the server from a DataFrame: no script, no CDN, and
each one readable without colour (labels on bars, a legend in words)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

import numpy as np

WIDTH, HEIGHT, LEFT, BOTTOM, TOP = 640, 260, 48, 40, 16
COLOURS = ("#2b6cb0", "#c05621", "#2f855a", "#6b46c1")


def _frame(title: str, body: list[str], note: str = "") -> str:
    return (
        f'<svg role="img" viewBox="0 0 {WIDTH} {HEIGHT}" width="100%" class="chart" xmlns="http://www.w3.org/2000/svg">'
        f"<title>{escape(title)}</title><desc>{escape(note or title)}</desc>"
        f'<line x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - 8}" y2="{HEIGHT - BOTTOM}" stroke="#555"/>'
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{HEIGHT - BOTTOM}" stroke="#555"/>' + "".join(body) + "</svg>"
    )


def _empty(title: str) -> str:
    return _frame(title, [f'<text x="{WIDTH / 2}" y="{HEIGHT / 2}" text-anchor="middle">No data yet</text>'])


def bars(title: str, labels: Sequence[str], values: Sequence[float], *, errors: Sequence[tuple] | None = None) -> str:
    """Vertical bars with their value written on each; optional (low, high) whiskers."""
    if not labels:
        return _empty(title)
    top = max([*values, *(h for _, h in errors or [] if h is not None), 1e-9])
    bottom = min([0.0, *values, *(lo for lo, _ in errors or [] if lo is not None)])
    span = (top - bottom) or 1.0
    plot_w, plot_h = WIDTH - LEFT - 16, HEIGHT - BOTTOM - TOP
    step = plot_w / len(labels)

    def y(value: float) -> float:
        return TOP + plot_h * (top - value) / span

    body = []
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        x = LEFT + i * step + step * 0.15
        y0, y1 = sorted((y(0.0), y(value)))
        body.append(
            f'<rect x="{x:.1f}" y="{y0:.1f}" width="{step * 0.7:.1f}" height="{max(y1 - y0, 0.5):.1f}" '
            f'fill="{COLOURS[0]}"><title>{escape(str(label))}: {value:g}</title></rect>'
        )
        body.append(
            f'<text x="{x + step * 0.35:.1f}" y="{y0 - 3:.1f}" text-anchor="middle" font-size="10">{value:g}</text>'
        )
        if len(labels) <= 24:
            body.append(
                f'<text x="{x + step * 0.35:.1f}" y="{HEIGHT - BOTTOM + 14}" text-anchor="middle" font-size="10">'
                f"{escape(str(label)[:14])}</text>"
            )
        if errors and errors[i][0] is not None:
            lo, hi = errors[i]
            cx = x + step * 0.35
            body.append(f'<line x1="{cx:.1f}" y1="{y(lo):.1f}" x2="{cx:.1f}" y2="{y(hi):.1f}" stroke="#222"/>')
    return _frame(title, body)


def histogram(title: str, series: dict[str, Sequence[float]], *, bins: int = 12) -> str:
    """Counts per bin, one bar per series within each bin, with a legend."""
    values = [v for vs in series.values() for v in vs if v is not None and not math.isnan(v)]
    if not values:
        return _empty(title)
    edges = np.histogram_bin_edges(values, bins=bins)
    counts = {name: np.histogram([v for v in vs if v is not None], bins=edges)[0] for name, vs in series.items()}
    top = max(max(c) for c in counts.values()) or 1
    plot_w, plot_h = WIDTH - LEFT - 16, HEIGHT - BOTTOM - TOP
    step = plot_w / bins
    width = step * 0.8 / max(len(series), 1)
    body = []
    for s, (name, c) in enumerate(counts.items()):
        for b, n in enumerate(c):
            x = LEFT + b * step + step * 0.1 + s * width
            h = plot_h * n / top
            body.append(
                f'<rect x="{x:.1f}" y="{TOP + plot_h - h:.1f}" width="{width:.1f}" height="{h:.1f}" '
                f'fill="{COLOURS[s % len(COLOURS)]}"><title>{escape(name)} {edges[b]:.2f} to '
                f"{edges[b + 1]:.2f}: {int(n)}</title></rect>"
            )
        body.append(
            f'<text x="{WIDTH - 150}" y="{TOP + 12 + 14 * s}" font-size="11" fill="{COLOURS[s % len(COLOURS)]}">'
            f"&#9632; {escape(name)} ({sum(int(n) for n in c)})</text>"
        )
    for b in (0, bins // 2, bins):
        body.append(
            f'<text x="{LEFT + b * step:.1f}" y="{HEIGHT - BOTTOM + 14}" font-size="10" text-anchor="middle">'
            f"{edges[b]:.2f}</text>"
        )
    body.append(f'<text x="{LEFT - 6}" y="{TOP + 8}" font-size="10" text-anchor="end">{int(top)}</text>')
    return _frame(title, body)


def scatter(
    title: str, xs: Sequence[float], ys: Sequence[float], labels: Sequence[str], *, x_name: str, y_name: str
) -> str:
    if not xs:
        return _empty(title)
    x_lo, x_hi, y_lo, y_hi = min(xs), max(xs), 0.0, max(max(ys), 1e-9)
    plot_w, plot_h = WIDTH - LEFT - 16, HEIGHT - BOTTOM - TOP
    body = []
    for x, y, label in zip(xs, ys, labels, strict=True):
        px = LEFT + plot_w * ((x - x_lo) / ((x_hi - x_lo) or 1.0))
        py = TOP + plot_h * (1 - (y - y_lo) / ((y_hi - y_lo) or 1.0))
        body.append(
            f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3" fill="{COLOURS[0]}">'
            f"<title>{escape(label)}: {x_name} {x:.2f}, {y_name} {y:.3f}</title></circle>"
        )
    body.append(
        f'<text x="{WIDTH / 2}" y="{HEIGHT - 6}" text-anchor="middle" font-size="11">{escape(x_name)} '
        f"({x_lo:.2f} to {x_hi:.2f})</text>"
    )
    body.append(f'<text x="{LEFT - 6}" y="{TOP + 8}" font-size="10" text-anchor="end">{y_hi:.2f}</text>')
    return _frame(title, body, note=f"{len(xs)} tasks: {y_name} against {x_name}")


def lines(title: str, series: dict[str, Sequence[tuple[float, float]]], *, x_name: str = "step") -> str:
    """One polyline per series over a shared x axis, a dot on each point (with its
    value as a tooltip), and a legend that names each series with its last value."""
    points = [(x, y) for pts in series.values() for x, y in pts if y is not None and math.isfinite(y)]
    if not points:
        return _empty(title)
    x_lo, x_hi = min(p[0] for p in points), max(p[0] for p in points)
    y_lo, y_hi = min(0.0, *(p[1] for p in points)), max(p[1] for p in points)
    plot_w, plot_h = WIDTH - LEFT - 16, HEIGHT - BOTTOM - TOP

    def at(x: float, y: float) -> tuple[float, float]:
        return (LEFT + plot_w * (x - x_lo) / ((x_hi - x_lo) or 1.0),
                TOP + plot_h * (1 - (y - y_lo) / ((y_hi - y_lo) or 1.0)))  # fmt: skip

    body = []
    for s, (name, pts) in enumerate(series.items()):
        colour = COLOURS[s % len(COLOURS)]
        kept = [(x, y) for x, y in pts if y is not None and math.isfinite(y)]
        coords = [at(x, y) for x, y in kept]
        if len(coords) > 1:
            path = " ".join(f"{px:.1f},{py:.1f}" for px, py in coords)
            body.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
        for (x, y), (px, py) in zip(kept, coords, strict=True):
            body.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="2.5" fill="{colour}">'
                        f"<title>{escape(name)} at {x_name} {x:g}: {y:.4g}</title></circle>")  # fmt: skip
        last = f"{kept[-1][1]:.4g}" if kept else "none"
        body.append(f'<text x="{WIDTH - 170}" y="{TOP + 12 + 14 * s}" font-size="11" fill="{colour}">'
                    f"&#9632; {escape(name)} (last {last})</text>")  # fmt: skip
    body.append(f'<text x="{LEFT - 6}" y="{TOP + 8}" font-size="10" text-anchor="end">{y_hi:.3g}</text>')
    body.append(f'<text x="{LEFT - 6}" y="{HEIGHT - BOTTOM}" font-size="10" text-anchor="end">{y_lo:.3g}</text>')
    body.append(f'<text x="{WIDTH / 2}" y="{HEIGHT - 6}" text-anchor="middle" font-size="11">{escape(x_name)} '
                f"({x_lo:g} to {x_hi:g})</text>")  # fmt: skip
    return _frame(title, body, note=f"{', '.join(series)} by {x_name}")
