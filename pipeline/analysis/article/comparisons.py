"""Every comparison with native, in one shape, from the comparison engine's frame.

Each summary stage writes its benchmark's rows of ``engine.compare``'s frame
(``<benchmark>_compared.parquet``); ``comparisons`` reads every such file, so a new benchmark
whose summary stage writes its frame counts here without an edit. Rows whose baseline is not
native (a rootless engine against its rootful twin) and rows judged on an absolute scale alone
(UDP loss in points) are not comparisons with native and stay out.

The summary at the head of the article and ``metrics.json`` are both written from this list.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from pipeline.analysis import engine
from pipeline.analysis.article.inputs import BASELINE, missing
from pipeline.data import schema

STATISTICS = ("p50", "p95", "p99")
# What a benchmark measures, as a finding names it; a benchmark not listed is named as is.
MEASURES = {
    "throughput": "throughput",
    "latency": "round trip",
    "http": "HTTP request latency",
    "coldstart": "cold start",
    "cpu": "CPU",
    "memory": "memory bandwidth",
    "disk": "disk",
    "syscall": "system calls",
}


@dataclass(frozen=True)
class Comparison:
    benchmark: str
    section: str  # the article section, and the figure directory, it belongs to
    environment: str
    mode: str
    path: str
    variant: str | None
    statistic: str | None  # "p50", "p99", ... or None for a summary's one ratio
    key: str  # variant and statistic as one metrics.json key
    ratio: float
    lo: float | None
    hi: float | None
    verdict: str | None
    margin: float | None
    higher_is_better: bool
    confidence: float | None
    source: Path
    resolvable: float | None = None  # smallest relative difference the runs could resolve
    n_runs: int | None = None  # runs both measured
    margin_us: float | None = None  # a verdict on the added microseconds (the Internet path)
    # The same comparison as an absolute difference (container minus native) in ``diff_unit``:
    # the mean per-run difference with its paired t interval.
    diff: float | None = None
    diff_lo: float | None = None
    diff_hi: float | None = None
    diff_unit: str | None = None
    # Why the setup fixes this metric, so that no test of it can fail (a UDP rate at a fixed
    # offered load), or None
    pinned: str | None = None

    @property
    def size(self) -> float:
        """How far from parity, in either direction: |log ratio| (a halving and a doubling are
        the same size)."""
        return abs(math.log(self.ratio)) if self.ratio > 0 else math.inf

    @property
    def what(self) -> str:
        """What was compared, in words: "round trip p50 (`udp`)"."""
        text = MEASURES.get(self.benchmark, self.benchmark)
        if self.statistic:
            text += f" {self.statistic}"
        return text + (f" (`{self.variant}`)" if self.variant else "")


def _float(value) -> float | None:
    if missing(value):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


_OFFERED = re.compile(r"(?:^|\s)(?:-b|--bitrate)[ =](\S+)")


def offered_rate(command) -> str | None:
    """The fixed offered load a recorded client command declares (iperf3's ``-b`` or
    ``--bitrate``), or None."""
    if missing(command):
        return None
    found = _OFFERED.search(str(command))
    return found.group(1) if found else None


def _pinned(raw: Path | None, benchmark: str, c: dict) -> str | None:
    """Why the setup fixes this comparison's metric, read from the runs' recorded commands:
    a rate measured at a fixed offered load cannot come out higher than that load, and any
    mode that carries it ties native, so an equivalence there cannot fail."""
    if raw is None or c["statistic"] is not None or not c["higher_is_better"]:
        return None
    try:
        runs = schema.read_dataset(raw, benchmark, "runs")
    except FileNotFoundError:
        return None
    cell = runs[(runs["path"] == c["path"]) & runs["mode"].isin([c["mode"], BASELINE])]
    if c["variant"] is not None and "variant" in cell.columns:
        cell = cell[cell["variant"] == c["variant"]]
    if "environment" in cell.columns and c["environment"]:
        cell = cell[cell["environment"] == c["environment"]]
    rates = {r for r in map(offered_rate, cell.get("command", [])) if r}
    return f"offered rate fixed at {', '.join(sorted(rates))}" if rates else None


# Absolute differences the articles read in another unit than the engine's: (benchmark,
# unit) -> (scale to the unit shown, unit); cold starts in milliseconds, as its summary says.
ENGINE_DIFF_UNITS = {("coldstart", "s"): (1000.0, "ms")}


def from_frame(compared: pd.DataFrame, source: Path | str) -> list[Comparison]:
    """The comparisons with native of ``engine.compare``'s frame (``source``: where it came
    from). A comparison judged on an absolute scale alone (UDP loss in points) and one whose
    estimate is missing stay out. The absolute difference is the engine's paired one: the
    mean per-run difference with its t interval."""
    rows = compared[(compared["baseline"] == BASELINE) & (compared["scale"] == "ratio")
                    & compared["estimate"].notna()]  # fmt: skip
    # a variant with several metrics names the metric in its key, as its summary's rows do
    metrics = compared[compared["scale"] == "ratio"].groupby(["benchmark", "variant"])[
        "metric"].nunique()  # fmt: skip
    out = []
    for r in rows.to_dict("records"):
        statistic = r["statistic"] if r["statistic"] in STATISTICS else None
        base = r["variant"]
        if metrics.get((r["benchmark"], r["variant"]), 1) > 1:
            base = f"{base}_{r['metric']}"
        key = "_".join(k for k in (base, statistic) if k) or "ratio"
        scale, unit = ENGINE_DIFF_UNITS.get((r["benchmark"], r["unit"]), (1.0, r["unit"]))
        diff = {k: None if _float(r[k]) is None else scale * r[k]
                for k in ("diff", "diff_lo", "diff_hi")}  # fmt: skip
        out.append(Comparison(
            benchmark=r["benchmark"], section=r["benchmark"], environment=r["environment"],
            mode=r["mode"], path=r["path"], variant=r["variant"], statistic=statistic,
            key=key.replace(".", "_"), ratio=float(r["estimate"]), lo=_float(r["lo"]),
            hi=_float(r["hi"]), verdict=None if missing(r["verdict"]) else str(r["verdict"]),
            margin=_float(r["margin"]), higher_is_better=bool(r["higher_is_better"]),
            confidence=_float(r["confidence"]), source=Path(source),
            resolvable=_float(r["resolvable"]), n_runs=int(r["n_runs"]),
            margin_us=_float(r["margin_abs"]), **diff,
            diff_unit=unit if diff["diff"] is not None else None,
        ))  # fmt: skip
    return out


def comparisons(processed: Path | str, raw: Path | str | None = None) -> list[Comparison]:
    """Every comparison with native in the frames the summary stages wrote under ``processed``
    (``engine.compared_files``); with ``raw`` (the runs tables), those whose metric the setup
    fixes carry why (``pinned``)."""
    out = []
    for path in engine.compared_files(processed):
        out += from_frame(pd.read_parquet(path), path)
    if raw is None:
        return out
    raw = Path(raw)
    return [replace(c, pinned=_pinned(raw, c.benchmark, c.__dict__)) for c in out]


def questions(found: list[Comparison], headline: Mapping | None) -> list[Comparison]:
    """The comparisons a profile's ``headline`` (params: benchmark -> modes, and optionally
    paths and variants) names as its questions: their median or one ratio (p50), never a tail
    percentile; empty when the profile names none."""
    return [c for c in found if c.statistic in (None, "p50") and not c.pinned
            and engine.asks(headline, c.benchmark, c.mode, c.path, c.variant)]  # fmt: skip


def resolved(c: Comparison) -> bool:
    """Whether a test answered: a difference either way, or equivalence within the margin."""
    return bool(c.verdict) and not str(c.verdict).startswith("inconclusive")


def headline_metrics(asked: list[Comparison]) -> dict:
    """The headline questions' count and how many a test resolved, for metrics.json (nothing
    when the profile names none)."""
    if not asked:
        return {}
    return {"headline.questions": len(asked),
            "headline.resolved": sum(resolved(c) for c in asked)}  # fmt: skip


# The verdict as a number, for ``dvc exp show`` and ``dvc metrics diff`` (which compare numbers
# only): its legend is written beside metrics.json (``verdicts.json``).
VERDICT_CODES = {"faster": -1, "equivalent": 0, "overhead": 1, "inconclusive": 2}


def metrics(found: list[Comparison]) -> dict:
    """One flat level, ``"<benchmark>.<mode>.<path>.<variant or statistic>.<field>"`` -> a
    number: the ratio to native (``estimate``), its interval (``lo``, ``hi``) and the verdict's
    code (``VERDICT_CODES``; absent when the summary has none).

    Only complete entries: a comparison whose ratio or interval is not a finite number is left
    out, so the file holds JSON numbers only. With more than one environment the path names it
    ("dc@lab"). Keys hold no other "." than the separators, so DVC's own flattening keeps every
    comparison apart.
    """
    environments = {c.environment for c in found}
    flat: dict[str, float] = {}
    for c in found:
        if c.lo is None or c.hi is None:
            continue
        path = c.path if len(environments) <= 1 else f"{c.path}@{c.environment}"
        parts = [p.replace(".", "_") for p in (c.benchmark, c.mode, path, c.key)]
        key = ".".join(parts)
        flat[f"{key}.estimate"], flat[f"{key}.lo"], flat[f"{key}.hi"] = c.ratio, c.lo, c.hi
        if c.verdict in VERDICT_CODES:
            flat[f"{key}.verdict"] = VERDICT_CODES[c.verdict]
    return dict(sorted(flat.items()))


def metrics_json(flat: dict) -> str:
    """``metrics`` as the file's text; NaN cannot reach it (``allow_nan`` would raise)."""
    return json.dumps(flat, indent=1, allow_nan=False) + "\n"


def verdicts_json() -> str:
    """The legend of the verdict codes in metrics.json."""
    legend = {
        "field": "verdict",
        "codes": {str(code): name for name, code in VERDICT_CODES.items()},
        "meaning": {
            "faster": "better than native: a paired t test rejects parity, on the better side",
            "equivalent": "the ratio's interval at the equivalence level lies inside the margin",
            "overhead": "worse than native: a paired t test rejects parity, on the worse side",
            "inconclusive": "neither: the interval still allows both",
        },
        "estimate": "ratio to native: geometric mean of the per-run ratios; lo, hi: its interval",
    }
    return json.dumps(legend, indent=1) + "\n"
