"""One look for every figure of the study, and one way to save them.

Every mode has one colour and one position wherever it appears, its entry in the mode
catalogue (``pipeline/catalogue.py``), so a reader who learnt that "docker-proxy is the orange
one" on one figure can rely on it on the next. ``save`` writes SVG (for the article), PNG at
scale 2 (for quick viewing), an interactive HTML page (hover a mark for its numbers) and the
Vega-Lite spec (so a figure can be re-rendered or restyled without re-running the analysis).

Ratios to native are drawn on a log axis (``ratio_x``): 0.5x and 2x are the same distance from
1x, so a halving and a doubling look alike, and cold start's 12x fits beside CPU's 0.97x. Tick
values are picked so that no two labels collide (``log_ticks``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd

from pipeline import catalogue

THEME = "container_overhead"
# vl-convert ships Liberation Sans, so the PNG/SVG text metrics do not depend on the fonts a
# machine happens to have installed.
FONT = "Liberation Sans"

# A mode's label, colour and place in the reading order are its entry in the mode catalogue
# (pipeline/catalogue.py); these are the catalogue's ranked modes (the controls rank after them,
# with any mode this checkout does not know).
MODE_ORDER: list[str] = list(catalogue.RANKED)
MODE_COLORS: dict[str, str] = {m: catalogue.colour(m) for m in MODE_ORDER}
MODE_LABELS: dict[str, str] = {m: catalogue.label(m) for m in MODE_ORDER}
UNKNOWN_COLOR = catalogue.UNKNOWN_COLOR


def mode_rank(mode: str) -> int:
    """Position of ``mode`` in the project's order; controls and unknown modes go last."""
    return catalogue.rank(mode)


def mode_label(mode: str) -> str:
    """What a reader calls ``mode`` (the catalogue's label; its name where it has none)."""
    return catalogue.label(mode)


def mode_scale(modes) -> alt.Scale:
    """Colour scale for the ``modes`` present, in project order, with the project's colours."""
    domain = sorted(dict.fromkeys(modes), key=lambda m: (mode_rank(m), m))
    return alt.Scale(domain=domain, range=[catalogue.colour(m) for m in domain])


def theme() -> alt.theme.ThemeConfig:
    """The project theme: readable sizes on paper and on screen, no chart junk."""
    return {
        "config": {
            "font": FONT,
            "background": "white",
            "view": {"stroke": None, "continuousWidth": 360, "continuousHeight": 240},
            "title": {"fontSize": 15, "fontWeight": "bold", "anchor": "start", "offset": 10},
            "axis": {
                "labelFontSize": 12,
                "titleFontSize": 13,
                "titleFontWeight": "normal",
                "gridColor": "#e6e6e6",
                "domainColor": "#888888",
                "tickColor": "#888888",
                "labelLimit": 320,
            },
            "header": {"labelFontSize": 13, "titleFontSize": 13},
            "legend": {"labelFontSize": 12, "titleFontSize": 12, "labelLimit": 320},
            "text": {"fontSize": 12},
            "point": {"size": 70, "filled": True, "opacity": 1},
        }
    }


# Importing the module is enough for charts displayed in a notebook to use the theme.
alt.theme.register(THEME, enable=True)(theme)


def use_theme() -> None:
    """Enable the project theme (idempotent); ``save`` does it for you."""
    alt.theme.enable(THEME)


def save(
    chart: alt.TopLevelMixin, out_dir: Path | str, stem: str, caption: str | None = None
) -> list[Path]:
    """Write ``<stem>.svg``, ``<stem>.png`` (scale 2), ``<stem>.html`` and ``<stem>.vl.json``
    into ``out_dir``.

    The HTML page is the interactive figure: the same spec, whose marks show their tooltips on
    hover. It loads Vega from its CDN (a bundled page is about 1 MB and 2 s of rendering per
    figure); the ``.vl.json`` beside it re-renders offline. With ``caption``, also
    ``<stem>.caption.md``, so the article takes the caption from the same stage that drew the
    figure. Returns the paths written.
    """
    import vl_convert as vlc

    use_theme()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    spec = chart.to_dict()
    paths = [out / f"{stem}{ext}" for ext in (".svg", ".png", ".html", ".vl.json")]
    # One compilation to Vega, and the PNG rasterised from the SVG: the same files as
    # vegalite_to_svg and vegalite_to_png give (each compiles and renders on its own), in half
    # the time.
    svg = vlc.vega_to_svg(vlc.vegalite_to_vega(spec))
    paths[0].write_text(svg, encoding="utf-8")
    paths[1].write_bytes(vlc.svg_to_png(svg, scale=2))
    paths[2].write_text(vlc.vegalite_to_html(spec, bundle=False), encoding="utf-8")
    paths[3].write_text(json.dumps(spec, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    if caption is not None:
        paths.append(out / f"{stem}.caption.md")
        paths[-1].write_text(caption.strip() + "\n", encoding="utf-8")
    return paths


# --- log axes, ratio axes, intervals ---------------------------------------------------------

# Tick candidates of a log axis, most wanted first: 1 (native), the decades, then 2 and 5 of
# each decade, then the values a few percent from 1 that CPU and memory ratios need.
_DECADES = [10.0**k for k in range(-4, 7)]
_HALVES = [m * d for d in _DECADES for m in (2.0, 5.0)]
_NEAR_ONE = [0.8, 1.25, 0.9, 1.1, 0.95, 1.05, 0.98, 1.02, 0.99, 1.01, 1.5, 3.0, 0.7, 0.6]
# Wide enough for the longest label a log axis gets here ("0.95×", "200 ms") at 12 px.
MIN_TICK_GAP_PX = 46.0


def log_ticks(
    lo: float, hi: float, width: float, min_gap: float = MIN_TICK_GAP_PX,
    candidates: Sequence[float] | None = None,
) -> list[float]:  # fmt: skip
    """Tick values for a log axis from ``lo`` to ``hi`` drawn ``width`` pixels wide: candidates
    taken in order of preference (1, decades, 2s and 5s, values near 1) and kept only where
    they are at least ``min_gap`` pixels from every tick already kept, so labels never
    collide. Sorted."""
    if not (lo > 0 and hi > lo and width > 0):
        raise ValueError(f"a log axis needs 0 < lo < hi and a width, got {lo}, {hi}, {width}")
    span = math.log(hi / lo)
    pool = [1.0, *_DECADES, *_HALVES, *_NEAR_ONE] if candidates is None else list(candidates)
    kept: list[float] = []
    for v in pool:
        if not lo <= v <= hi or v in kept:
            continue
        x = width * math.log(v / lo) / span
        if all(abs(x - width * math.log(k / lo) / span) >= min_gap for k in kept):
            kept.append(v)
    return sorted(kept)


def log_domain(values: Iterable[float], pad: float = 0.04, floor: float = 1e-12) -> list[float]:
    """``[lo, hi]`` around the positive finite ``values`` on a log axis, padded by ``pad`` of
    the span (in log units) on each side."""
    v = np.asarray([x for x in values if x is not None], dtype=float)
    v = v[np.isfinite(v) & (v > floor)]
    if not len(v):
        return [0.5, 2.0]
    lo, hi = float(v.min()), float(v.max())
    if hi <= lo:
        lo, hi = lo / 1.1, hi * 1.1
    span = math.log(hi / lo)
    return [lo * math.exp(-pad * span), hi * math.exp(pad * span)]


RATIO_LABEL = "format(datum.value, '~g') + '×'"


# A duration held in µs, labelled in ms from 1 ms up: the Internet path's round trips read
# "40 ms", the datacenter's "70 µs", on the same kind of axis.
TIME_US_LABEL = (
    "datum.value >= 1000 ? format(datum.value / 1000, '~g') + ' ms' "
    ": format(datum.value, '~g') + ' µs'"
)


def log_scale(domain: Sequence[float]) -> alt.Scale:
    """A log scale over exactly ``domain`` (no rounding out to decades)."""
    return alt.Scale(type="log", domain=[float(domain[0]), float(domain[1])], nice=False,
                     zero=False)  # fmt: skip


def ratio_x(
    field: str, domain: Sequence[float], width: float, title: str | None = "ratio to native",
    **axis,
) -> alt.X:  # fmt: skip
    """An x channel for ratios to native on a log axis over ``domain``: ticks from
    ``log_ticks`` labelled 0.5×, 1×, 2×, 50×."""
    lo, hi = float(domain[0]), float(domain[1])
    return alt.X(
        field,
        title=title,
        scale=log_scale(domain),
        axis=alt.Axis(values=log_ticks(lo, hi, width), labelExpr=RATIO_LABEL, **axis),
    )


def interval_text(lo, hi, fmt: str = "{:.3f}") -> list[str]:
    """``[lo, hi]`` as text per row (for tooltips), "none" where there is no interval."""
    return [
        "none" if a is None or b is None or np.isnan(a) or np.isnan(b) else
        f"[{fmt.format(a)}, {fmt.format(b)}]"
        for a, b in zip(lo, hi, strict=True)
    ]  # fmt: skip


def outside_interval(
    frame: pd.DataFrame, point: str, lo: str, hi: str, rel_tol: float = 1e-9
) -> pd.DataFrame:
    """The rows of ``frame`` whose estimate ``point`` lies outside its own interval
    ``[lo, hi]`` (beyond a relative ``rel_tol`` for rounding). A figure draws such a row as it
    is and says where it is: an estimate outside its interval is a fault of the data or of the
    interval's method, and hiding it would hide that."""
    p, a, b = (pd.to_numeric(frame[c], errors="coerce") for c in (point, lo, hi))
    tol = rel_tol * p.abs().clip(lower=1e-300)
    bad = (p < a - tol) | (p > b + tol)
    return frame[bad.fillna(False)]


def outside_text(frame: pd.DataFrame, point: str, lo: str, hi: str, label) -> str:
    """A caption sentence naming each estimate outside its interval (``outside_interval``),
    ``label(row) -> str`` saying where; empty when there is none."""
    bad = outside_interval(frame, point, lo, hi)
    if bad.empty:
        return ""
    where = "; ".join(
        f"{label(r)}: {r[point]:.4g} outside [{r[lo]:.4g}, {r[hi]:.4g}]"
        for r in bad.to_dict("records")
    )
    return (f" Estimate outside its own interval, drawn as computed (a fault to fix upstream, "
            f"not in the figure): {where}.")  # fmt: skip
