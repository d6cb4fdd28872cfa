"""Server-rendered, deterministic SVG for "Scaling by <axis>" (docs/design.md §8).

Input is the chart block of an operation page's JSON (so page, JSON twin and picture agree):
``{"axis": str, "series": [{"implementation": str, "points": [{"x", "median_ns", "run_id"}]}],
"floor": [{"x", "floor_ns"}]}``. Output is a fixed-size SVG string; the same input always gives
byte-identical output. Every point is a link to its run with a ``<title>`` giving the exact value.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from kernelindex import urls
from kernelindex.domain.units import format_duration
from kernelindex.policy.floor_names import FLOOR_NAMES, PHYSICAL

WIDTH, HEIGHT = 720, 340
LEFT, RIGHT, TOP, BOTTOM = 70, 128, 16, 48  # the right margin holds the series' end labels
MAX_SERIES = 5
WIDE_RANGE = 10.0  # max/min above this → log axis
FLOOR_COLOUR = "#8b95a1"
# One colour per implementation on every chart of the site: known projects by slug prefix, the rest
# by a stable hash into the remaining colours.
PROJECT_COLOURS = (("liger", "#6cb8ff"), ("transformers", "#f0b45a"), ("torch-compile", "#d58cff"),
                   ("pytorch", "#7ad39b"), ("torch", "#7ad39b"))
OTHER_COLOURS = ("#ff8a80", "#4fd1c5", "#e9d45b", "#f38ec6", "#a3b18a", "#9fa8ff")


def implementation_colour(slug: str) -> str:
    """The colour of an implementation's series wherever it is drawn (deterministic)."""
    for prefix, colour in PROJECT_COLOURS:
        if slug.startswith(prefix):
            return colour
    return OTHER_COLOURS[sum(slug.encode()) % len(OTHER_COLOURS)]


class ChartError(ValueError):
    pass


@dataclass(frozen=True)
class Scale:
    low: float
    high: float
    log: bool
    start: float
    end: float

    def __call__(self, value: float) -> float:
        lo, hi, v = self.low, self.high, value
        if self.log:
            lo, hi, v = math.log10(lo), math.log10(hi), math.log10(value)
        frac = 0.5 if hi == lo else (v - lo) / (hi - lo)
        return self.start + frac * (self.end - self.start)


def _is_wide(values: Sequence[float]) -> bool:
    return min(values) > 0 and max(values) / min(values) > WIDE_RANGE


def make_scale(values: Sequence[float], start: float, end: float, *, pad: float = 0.0,
               log: bool | None = None) -> Scale:
    """Linear or log scale over ``values``; ``log=None`` decides from the range (> 10× → log)."""
    if not values:
        raise ChartError("a scale needs at least one value")
    log = _is_wide(values) if log is None else (log and min(values) > 0)
    low, high = min(values), max(values)
    if log:
        factor = 10 ** (pad * (math.log10(high) - math.log10(low)) if high > low else 0.1)
        return Scale(low / factor, high * factor, True, start, end)
    span = (high - low) or abs(high) or 1.0
    return Scale(max(0.0, low - pad * span), high + pad * span, False, start, end)


def format_axis_value(x: float) -> str:
    """1024 → '1024', 8192 → '8k', 131072 → '128k' (powers of two shown in k above 4096)."""
    if x >= 8192 and x % 1024 == 0:
        return f"{int(x // 1024)}k"
    return f"{int(x)}" if float(x).is_integer() else f"{x:g}"


def _nice_step(span: float, count: int) -> float:
    raw = span / max(count, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    for mult in (1, 2, 2.5, 5, 10):
        if raw <= mult * magnitude:
            return mult * magnitude
    return 10 * magnitude


def y_ticks(scale: Scale, *, all_lines: bool = False) -> list[float]:
    """Tick values inside the scale: 1-2-5 per decade on log scales (labels keep the decades when
    there are too many; gridlines, ``all_lines``, keep all), nice steps on linear ones."""
    if scale.log:
        ticks = []
        for exp in range(math.floor(math.log10(scale.low)), math.ceil(math.log10(scale.high)) + 1):
            for mult in (1, 2, 5):
                value = mult * 10**exp
                if scale.low <= value <= scale.high:
                    ticks.append(float(value))
        if len(ticks) > 7 and not all_lines:
            ticks = [t for t in ticks if str(int(t)).startswith("1")] or ticks
        return ticks
    step = _nice_step(scale.high - scale.low, 5)
    first = math.ceil(scale.low / step) * step
    return [first + i * step for i in range(int((scale.high - first) / step) + 1)]


def _f(value: float) -> str:
    return f"{value:.1f}"


def _point_title(impl: str, axis: str, point: Mapping[str, Any]) -> str:
    ns = point["median_ns"]
    return f"{impl} · {axis} = {format_axis_value(point['x'])} · {format_duration(ns)} ({int(ns):,} ns median)"


def _series(chart: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    series = [s for s in chart.get("series", []) if s.get("points")]
    return series[:MAX_SERIES]


def _all(values: Iterable[float]) -> list[float]:
    return [float(v) for v in values if v is not None and v > 0]


def render_scaling_svg(chart: Mapping[str, Any], *, chart_id: str = "scaling") -> str:
    """The chart as an SVG document fragment (deterministic)."""
    axis = str(chart["axis"])
    series = _series(chart)
    floor = [p for p in chart.get("floor", []) or [] if p.get("floor_ns")]
    if not series:
        raise ChartError("no series with points to draw")
    xs = _all(p["x"] for s in series for p in s["points"])
    ys = _all([p["median_ns"] for s in series for p in s["points"]] + [p["floor_ns"] for p in floor])
    sx = make_scale(xs, LEFT, WIDTH - RIGHT, pad=0.04, log=chart.get("log_x"))
    sy = make_scale(ys, HEIGHT - BOTTOM, TOP, pad=0.06, log=chart.get("log_y"))
    title = f"Scaling by {axis}"
    with_floor = f", with the {FLOOR_NAMES[PHYSICAL]} (floor-v1 estimate)" if floor else ""
    desc = (f"Median latency against {axis} for {len(series)} implementation(s)"
            f"{with_floor}; {'log' if sy.log else 'linear'} latency axis, "
            f"{'log' if sx.log else 'linear'} {axis} axis.")
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" role="group" '
        f'aria-labelledby="{chart_id}-title {chart_id}-desc" class="scaling-chart" '
        'font-family="system-ui, sans-serif">',
        f'<title id="{chart_id}-title">{escape(title)}</title>',
        f'<desc id="{chart_id}-desc">{escape(desc)}</desc>',
        *_grid(sx, sy, sorted(set(xs)), axis),
    ]
    if floor:
        out.append(_floor_path(sx, sy, floor))
    for s in series:
        out.extend(_series_marks(sx, sy, s, implementation_colour(str(s["implementation"])), axis))
    out.extend(_end_labels(sx, sy, series))
    out.append("</svg>")
    return "\n".join(out)


def _grid(sx: Scale, sy: Scale, xs: list[float], axis: str) -> list[str]:
    parts = ['<g class="grid" stroke="#262d36" stroke-width="1">']
    for tick in y_ticks(sy, all_lines=True):
        y = _f(sy(tick))
        decade = not sy.log or str(int(tick)).startswith("1")
        dash = "" if decade else ' stroke-dasharray="2 4" class="minor"'
        parts.append(f'<line x1="{LEFT}" y1="{y}" x2="{WIDTH - RIGHT}" y2="{y}"{dash}/>')
    parts.append("</g>")
    parts.append('<g class="y-labels" fill="#a3adb9" font-size="11" text-anchor="end">')
    for tick in y_ticks(sy):
        parts.append(f'<text x="{LEFT - 6}" y="{_f(sy(tick) + 4)}">{escape(format_duration(tick))}</text>')
    parts.append("</g>")
    parts.append('<g class="x-labels" fill="#a3adb9" font-size="11" text-anchor="middle">')
    for x in xs:
        parts.append(f'<text x="{_f(sx(x))}" y="{HEIGHT - BOTTOM + 16}">{escape(format_axis_value(x))}</text>')
    parts.append("</g>")
    scale_note = " (log)" if sx.log else ""
    parts.append(
        f'<text x="{_f((LEFT + WIDTH - RIGHT) / 2)}" y="{HEIGHT - 8}" fill="#a3adb9" font-size="12" '
        f'text-anchor="middle">{escape(axis)}{scale_note} →</text>'
    )
    mid = _f((TOP + HEIGHT - BOTTOM) / 2)
    parts.append(
        f'<text x="14" y="{mid}" fill="#a3adb9" font-size="12" text-anchor="middle" '
        f'transform="rotate(-90 14 {mid})">median latency{" (log)" if sy.log else ""}</text>'
    )
    return parts


def _floor_path(sx: Scale, sy: Scale, floor: list[Mapping[str, Any]]) -> str:
    pts = sorted(floor, key=lambda p: p["x"])
    d = " ".join(f"{'M' if i == 0 else 'L'}{_f(sx(p['x']))},{_f(sy(p['floor_ns']))}" for i, p in enumerate(pts))
    tips = "; ".join(f"{format_axis_value(p['x'])}: {format_duration(p['floor_ns'])}" for p in pts)
    return (
        f'<path class="floor" d="{d}" fill="none" stroke="{FLOOR_COLOUR}" stroke-width="1.5" '
        f'stroke-dasharray="5 4"><title>{FLOOR_NAMES[PHYSICAL]} (floor-v1 estimate, not evidence) — '
        f'{escape(tips)}</title></path>'
    )


def _series_marks(sx: Scale, sy: Scale, series: Mapping[str, Any], colour: str, axis: str) -> list[str]:
    impl = str(series.get("title") or series["implementation"])
    pts = sorted(series["points"], key=lambda p: p["x"])
    d = " ".join(f"{'M' if i == 0 else 'L'}{_f(sx(p['x']))},{_f(sy(p['median_ns']))}" for i, p in enumerate(pts))
    parts = [
        f'<g class="series" data-implementation="{escape(str(series["implementation"]))}">',
        f'<path d="{d}" fill="none" stroke="{colour}" stroke-width="2"/>',
    ]
    for p in pts:
        label = _point_title(impl, axis, p)
        cx, cy = _f(sx(p["x"])), _f(sy(p["median_ns"]))
        value = escape(format_duration(p["median_ns"]))
        parts.append(
            f'<a href="{escape(urls.run(str(p["run_id"])))}" aria-label="{escape(label)}">'
            f'<circle cx="{cx}" cy="{cy}" r="4.5" fill="{colour}" stroke="#0b0d10" stroke-width="1">'
            f"<title>{escape(label)}</title></circle>"
            f'<text class="value-label" x="{cx}" y="{_f(sy(p["median_ns"]) - 9)}" font-size="11" '
            f'text-anchor="middle" fill="{colour}">{value}</text></a>'
        )
    parts.append("</g>")
    return parts


LABEL_GAP = 15.0  # > the 11 px label box (about 13.7 px tall as rendered)


@dataclass
class _EndLabel:
    y: float
    x: float
    slug: str
    name: str


LABEL_CHARS = 19  # what fits the right margin at 11 px; a longer name ends in '…' (the legend has it whole)


def _end_labels(sx: Scale, sy: Scale, series: list[Mapping[str, Any]]) -> list[str]:
    """Series names in the right margin beside their last point — never on top of a line — spread
    vertically so that no two overlap and all stay in the plot's height (a downward pass, then an
    upward one from the bottom edge)."""
    ends = []
    for s in series:
        last = max(s["points"], key=lambda p: p["x"])
        name = str(s.get("title") or s["implementation"])
        name = name if len(name) <= LABEL_CHARS else name[:LABEL_CHARS - 1] + "…"
        ends.append(_EndLabel(sy(last["median_ns"]) + 4, sx(last["x"]), str(s["implementation"]), name))
    ends.sort(key=lambda e: (e.y, e.slug))
    top, bottom = TOP + 10, HEIGHT - BOTTOM - 4
    for i, end in enumerate(ends):
        end.y = max(end.y, top if i == 0 else ends[i - 1].y + LABEL_GAP)
    for i in range(len(ends) - 1, -1, -1):
        end = ends[i]
        end.y = min(end.y, bottom if i == len(ends) - 1 else ends[i + 1].y - LABEL_GAP)
    parts = ['<g class="labels" font-size="11" text-anchor="start">']
    for end in ends:
        parts.append(f'<text x="{_f(WIDTH - RIGHT + 6)}" y="{_f(end.y)}" '
                     f'fill="{implementation_colour(end.slug)}">{escape(end.name)}</text>')
    parts.append("</g>")
    return parts

