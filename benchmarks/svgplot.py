"""A tiny dependency-free SVG line-plot writer for benchmark reports.

``line_plot`` draws one polyline with point markers per series, axes with tick labels
(whole decades such as 1k / 10k / 100k on a log axis, "nice" 1-2-5 steps on a linear
one), light grid lines and a legend to the right of the plot, and returns a standalone
``<svg>`` document of 720x420 user units.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from xml.sax.saxutils import escape, quoteattr

WIDTH = 720
HEIGHT = 420
LEFT, RIGHT, TOP, BOTTOM = 72, 200, 40, 56  # margins around the plot area
# Okabe-Ito colours (distinguishable with common colour-vision deficiencies), then extras.
COLOURS = (
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00",
    "#56B4E9", "#000000", "#8C564B", "#7F7F7F", "#BCBD22",
)  # fmt: skip
MARKERS = ("circle", "square", "diamond", "triangle")
FONT = "font-family='Helvetica, Arial, sans-serif'"


def _fmt(value: float) -> str:
    """Short tick label: 1k, 10k, 2.5M, 0.01, 150."""
    if value == 0:
        return "0"
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g}{suffix}"
    return f"{value:.3g}"


def _log_ticks(lo: float, hi: float) -> tuple[float, float, list[float], list[float]]:
    """Decade-aligned domain, major ticks (decades) and minor ticks (2..9 x decade)."""
    d_lo = math.floor(math.log10(lo))
    d_hi = math.ceil(math.log10(hi))
    if d_hi == d_lo:
        d_hi += 1
    step = max(1, math.ceil((d_hi - d_lo) / 8))  # at most ~8 labelled decades
    major = [10.0**d for d in range(d_lo, d_hi + 1, step)]
    minor = []
    if step == 1:
        minor = [m * 10.0**d for d in range(d_lo, d_hi) for m in range(2, 10)]
    return 10.0**d_lo, 10.0**d_hi, major, minor


def _linear_ticks(lo: float, hi: float) -> tuple[float, float, list[float], list[float]]:
    """Domain rounded out to a 1-2-5 step giving about five ticks."""
    if lo == hi:
        pad = abs(lo) * 0.1 or 1.0
        lo, hi = lo - pad, hi + pad
    raw = (hi - lo) / 5
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    start = math.floor(lo / step) * step
    stop = math.ceil(hi / step) * step
    count = round((stop - start) / step)
    major = [start + i * step for i in range(count + 1)]
    return start, stop, [round(t, 12) for t in major], []


def _scale(
    values: list[float], log: bool, pixel_lo: float, pixel_hi: float, axis: str
) -> tuple[Callable[[float], float], list[float], list[float]]:
    """A value -> pixel mapping for one axis plus its major and minor ticks."""
    if log and min(values) <= 0:
        raise ValueError(f"log {axis} axis needs positive values, got {min(values)}")
    if log:
        lo, hi, major, minor = _log_ticks(min(values), max(values))
        a, b = math.log10(lo), math.log10(hi)

        def to_pixel(v: float) -> float:
            return pixel_lo + (math.log10(v) - a) / (b - a) * (pixel_hi - pixel_lo)

    else:
        lo, hi, major, minor = _linear_ticks(min(values), max(values))

        def to_pixel(v: float) -> float:
            return pixel_lo + (v - lo) / (hi - lo) * (pixel_hi - pixel_lo)

    return to_pixel, major, minor


def _marker(shape: str, x: float, y: float, colour: str, tip: str) -> str:
    """One point marker (circle, square, diamond or triangle) with a hover tooltip."""
    r = 3.5
    if shape == "circle":
        tag, geometry = "circle", f"cx='{x:.1f}' cy='{y:.1f}' r='{r}'"
    elif shape == "square":
        tag, geometry = "rect", f"x='{x - r:.1f}' y='{y - r:.1f}' width='{2 * r}' height='{2 * r}'"
    else:
        if shape == "diamond":
            pts = [(x, y - r * 1.3), (x + r * 1.3, y), (x, y + r * 1.3), (x - r * 1.3, y)]
        else:  # triangle
            pts = [(x, y - r * 1.3), (x + r * 1.2, y + r), (x - r * 1.2, y + r)]
        tag = "polygon"
        geometry = "points='" + " ".join(f"{px:.1f},{py:.1f}" for px, py in pts) + "'"
    return (
        f"<{tag} {geometry} fill='{colour}' stroke='white' stroke-width='0.8'>"
        f"<title>{escape(tip)}</title></{tag}>"
    )


def line_plot(
    series: dict[str, list[tuple[float, float]]],
    *,
    title: str,
    x_label: str,
    y_label: str,
    log_x: bool = True,
    log_y: bool = False,
) -> str:
    """Render ``{name: [(x, y), ...]}`` as a standalone SVG line plot (points drawn in x order).

    Raises ValueError for no series, an empty series, a non-finite value, or a value that
    is not positive on a log axis.
    """
    if not series:
        raise ValueError("line_plot needs at least one series")
    clean: dict[str, list[tuple[float, float]]] = {}
    for name, points in series.items():
        if not points:
            raise ValueError(f"series {name!r} has no points")
        pts = [(float(x), float(y)) for x, y in points]
        if not all(math.isfinite(v) for p in pts for v in p):
            raise ValueError(f"series {name!r} has a non-finite value")
        clean[name] = sorted(pts)
    xs = [x for pts in clean.values() for x, _ in pts]
    ys = [y for pts in clean.values() for _, y in pts]
    x0, x1 = LEFT, WIDTH - RIGHT
    y0, y1 = HEIGHT - BOTTOM, TOP  # pixel y grows downwards
    to_x, x_major, x_minor = _scale(xs, log_x, x0, x1, "x")
    to_y, y_major, y_minor = _scale(ys, log_y, y0, y1, "y")

    out = [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{WIDTH}' height='{HEIGHT}' "
        f"viewBox='0 0 {WIDTH} {HEIGHT}' {FONT} font-size='12'>",
        f"<title>{escape(title)}</title>",
        f"<rect width='{WIDTH}' height='{HEIGHT}' fill='white'/>",
    ]
    grid = "stroke='#e6e6e6' stroke-width='1'"
    faint = "stroke='#f3f3f3' stroke-width='1'"
    for v in x_minor:
        out.append(f"<line x1='{to_x(v):.1f}' y1='{y0}' x2='{to_x(v):.1f}' y2='{y1}' {faint}/>")
    for v in y_minor:
        out.append(f"<line x1='{x0}' y1='{to_y(v):.1f}' x2='{x1}' y2='{to_y(v):.1f}' {faint}/>")
    for v in x_major:
        px = to_x(v)
        out.append(f"<line x1='{px:.1f}' y1='{y0}' x2='{px:.1f}' y2='{y1}' {grid}/>")
        out.append(f"<line x1='{px:.1f}' y1='{y0}' x2='{px:.1f}' y2='{y0 + 5}' stroke='#333'/>")
        out.append(
            f"<text x='{px:.1f}' y='{y0 + 18}' text-anchor='middle' fill='#333'>"
            f"{escape(_fmt(v))}</text>"
        )
    for v in y_major:
        py = to_y(v)
        out.append(f"<line x1='{x0}' y1='{py:.1f}' x2='{x1}' y2='{py:.1f}' {grid}/>")
        out.append(f"<line x1='{x0 - 5}' y1='{py:.1f}' x2='{x0}' y2='{py:.1f}' stroke='#333'/>")
        out.append(
            f"<text x='{x0 - 8}' y='{py + 4:.1f}' text-anchor='end' fill='#333'>"
            f"{escape(_fmt(v))}</text>"
        )
    out.append(
        f"<rect x='{x0}' y='{y1}' width='{x1 - x0}' height='{y0 - y1}' fill='none' stroke='#333'/>"
    )
    out.append(
        f"<text x='{(x0 + x1) / 2:.1f}' y='{TOP - 16}' text-anchor='middle' font-size='15' "
        f"font-weight='bold'>{escape(title)}</text>"
    )
    out.append(
        f"<text x='{(x0 + x1) / 2:.1f}' y='{HEIGHT - 14}' text-anchor='middle'>"
        f"{escape(x_label)}</text>"
    )
    cy = (y0 + y1) / 2
    out.append(
        f"<text x='18' y='{cy:.1f}' text-anchor='middle' transform='rotate(-90 18 {cy:.1f})'>"
        f"{escape(y_label)}</text>"
    )

    legend_x = x1 + 16
    for i, (name, pts) in enumerate(clean.items()):
        colour = COLOURS[i % len(COLOURS)]
        shape = MARKERS[i % len(MARKERS)]
        coords = " ".join(f"{to_x(x):.1f},{to_y(y):.1f}" for x, y in pts)
        out.append(f"<g class='series' data-name={quoteattr(name)}>")
        out.append(
            f"<polyline points='{coords}' fill='none' stroke='{colour}' stroke-width='2' "
            "stroke-linejoin='round'/>"
        )
        for x, y in pts:
            out.append(_marker(shape, to_x(x), to_y(y), colour, f"{name}: {x:g}, {y:g}"))
        out.append("</g>")
        ly = TOP + 10 + i * 22
        out.append(
            f"<line x1='{legend_x}' y1='{ly}' x2='{legend_x + 24}' y2='{ly}' "
            f"stroke='{colour}' stroke-width='2'/>"
        )
        out.append(_marker(shape, legend_x + 12, ly, colour, name))
        out.append(f"<text x='{legend_x + 32}' y='{ly + 4}' fill='#222'>{escape(name)}</text>")
    out.append("</svg>")
    return "\n".join(out) + "\n"
