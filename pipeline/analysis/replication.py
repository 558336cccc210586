"""Replicate the five published articles: each headline number beside the study's own figure.

``data/reference/published.csv`` holds every headline number of the articles in
``shared/seeds/``, typed once with a verbatim quote. Only raw numbers are typed there; the
comparison each one implies (a ratio to the article's baseline, or a difference in
microseconds) is derived here, and so is its range: a published number stands for every value
that rounds to it (half a unit of its last typed digit), and a ratio of two rounded numbers
spans the ratios of their ranges.

Absolute numbers are never compared (the articles ran on other hardware); only the ratio or the
difference the article implies is set beside the study's same comparison and its interval, read
from what the summarise stages write under ``<processed_dir>/<benchmark>/``.

Verdict rule (one rule, no extra tolerance):

- **consistent**: the published comparison (a point with its rounding range, a range "18-25%",
  or a bound "within 10%") overlaps the study's interval;
- **not consistent**: it lies wholly outside the study's interval;
- **not measurable here**: with the reason (the article gives no baseline, the benchmark or mode
  is not in the study's data, the mode was skipped, the study's summary has no such statistic,
  the article's baseline is not a study mode).

A new benchmark joins by one entry in ``SOURCES``: where its summary is and which columns hold
its ratio (and difference) to native with their interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.analysis import stats

BASELINE = "native"
CONSISTENT = "consistent"
NOT_CONSISTENT = "not consistent"
NOT_MEASURABLE = "not measurable here"
VERDICTS = (CONSISTENT, NOT_CONSISTENT, NOT_MEASURABLE)

COLUMNS = [
    "id",
    "article",
    "section",
    "metric",
    "configuration",
    "mode",
    "path",
    "benchmark",
    "variant",
    "statistic",
    "comparison",
    "relation",
    "value",
    "value_high",
    "unit",
    "baseline_value",
    "baseline_configuration",
    "baseline_mode",
    "baseline_path",
    "stated",
    "stated_unit",
    "quote",
    "baseline_quote",
    "note",
]
NUMERIC = ("value", "value_high", "baseline_value", "stated")
COMPARISONS = ("ratio", "delta", "")
RELATIONS = ("=", "within")
# Units that already express the comparison: value -> ratio to the baseline.
RATIO_UNITS = {
    "% of baseline": lambda v: v / 100.0,
    "% above baseline": lambda v: 1.0 + v / 100.0,
    "% below baseline": lambda v: 1.0 - v / 100.0,
    "ratio to baseline": lambda v: v,
    "times below baseline": lambda v: 1.0 / v,
}
# ... value -> difference to the baseline in microseconds.
DELTA_UNITS = {"ms above baseline": 1000.0, "us above baseline": 1.0}
# "within X": a symmetric bound around parity.
BOUND_UNITS = {"% difference": ("ratio", 0.01), "us difference": ("delta", 1.0)}
# Absolute time units a difference can be formed from, in microseconds.
TIME_UNITS = {"s": 1e6, "ms": 1000.0, "us": 1.0}


# --- the published numbers -----------------------------------------------------------------


def load_published(path: Path | str) -> pd.DataFrame:
    """``published.csv`` with every column as text ("" when empty) plus ``*_num`` floats.

    The typed text is kept because its number of decimals sets the rounding range. Raises
    ValueError naming the row for anything the derivation could not interpret.
    """
    frame = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8")
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: missing columns {missing}")
    for col in NUMERIC:
        frame[f"{col}_num"] = pd.to_numeric(frame[col].replace("", np.nan), errors="raise")
    problems = [f"{r.id}: {p}" for r in frame.itertuples() for p in _row_problems(r)]
    if not frame["id"].is_unique:
        problems.append("ids are not unique")
    if problems:
        raise ValueError(f"{path}: " + "; ".join(problems))
    return frame


def _row_problems(r) -> list[str]:
    out = []
    if r.comparison not in COMPARISONS:
        out.append(f"comparison {r.comparison!r} is not one of {COMPARISONS}")
    if r.relation not in RELATIONS:
        out.append(f"relation {r.relation!r} is not one of {RELATIONS}")
    if r.comparison and not _knows_unit(r.unit, bool(r.baseline_value), r.comparison):
        out.append(f"unit {r.unit!r} cannot give a {r.comparison} (baseline {r.baseline_value!r})")
    if r.stated and r.stated_unit not in RATIO_UNITS:
        out.append(f"stated_unit {r.stated_unit!r} is not one of {list(RATIO_UNITS)}")
    return out


def _knows_unit(unit: str, has_baseline: bool, comparison: str) -> bool:
    if unit in BOUND_UNITS:
        return BOUND_UNITS[unit][0] == comparison
    if comparison == "ratio":
        return unit in RATIO_UNITS or has_baseline
    return unit in DELTA_UNITS or (has_baseline and unit in TIME_UNITS)


def half_unit(text: str) -> float:
    """Half a unit of the last digit typed: "74.3" -> 0.05, "22400" -> 0.5."""
    return 0.5 * 10.0 ** -len(text.split(".", 1)[1]) if "." in text else 0.5


def _span(text: str) -> tuple[float, float]:
    """The values that round to the typed number."""
    v, h = float(text), half_unit(text)
    return v - h, v + h


def _ratio_of_spans(num: tuple[float, float], den: tuple[float, float]) -> tuple[float, float]:
    ends = [a / b for a in num for b in den]
    return min(ends), max(ends)


def implied(row: pd.Series) -> tuple[float, float, float]:
    """``(point, lo, hi)`` of the comparison the article implies, in the study's units (a ratio
    to the baseline, or a difference in microseconds); NaN when it implies none.

    ``point`` is the value as typed (the middle of a range, NaN for a bound); ``lo``/``hi`` also
    cover rounding: every value that rounds to what the article printed.
    """
    nan = (math.nan, math.nan, math.nan)
    if not row["comparison"]:
        return nan
    low_text, high_text = row["value"], row["value_high"] or row["value"]
    unit = row["unit"]
    if unit in BOUND_UNITS:
        scale = BOUND_UNITS[unit][1]
        centre = 1.0 if row["comparison"] == "ratio" else 0.0
        width = (float(low_text) + half_unit(low_text)) * scale
        return math.nan, centre - width, centre + width
    if unit in RATIO_UNITS or unit in DELTA_UNITS:
        convert = RATIO_UNITS.get(unit) or (lambda v: v * DELTA_UNITS[unit])
        ends = [convert(v) for t in (low_text, high_text) for v in _span(t)]
        point = convert((float(low_text) + float(high_text)) / 2.0)
        return point, min(ends), max(ends)
    base_text = row["baseline_value"]
    base = float(base_text)
    if row["comparison"] == "ratio":
        lo, _ = _ratio_of_spans(_span(low_text), _span(base_text))
        _, hi = _ratio_of_spans(_span(high_text), _span(base_text))
        point = (float(low_text) + float(high_text)) / 2.0 / base
        return point, lo, hi
    scale = TIME_UNITS[unit]
    b_lo, b_hi = _span(base_text)
    lo = (_span(low_text)[0] - b_hi) * scale
    hi = (_span(high_text)[1] - b_lo) * scale
    point = ((float(low_text) + float(high_text)) / 2.0 - base) * scale
    return point, lo, hi


def stated_ratio(row: pd.Series) -> tuple[float, float, float]:
    """``(point, lo, hi)`` of the ratio the article itself prints beside the raw numbers."""
    if not row["stated"]:
        return math.nan, math.nan, math.nan
    convert = RATIO_UNITS[row["stated_unit"]]
    ends = [convert(v) for v in _span(row["stated"])]
    return convert(float(row["stated"])), min(ends), max(ends)


def derive(published: pd.DataFrame) -> pd.DataFrame:
    """``published`` with the implied comparison and the article's own arithmetic check.

    Adds ``implied_ratio`` or ``implied_delta_us`` (the point), ``implied_lo``/``implied_hi``
    (its range, rounding included), ``stated_ratio`` and ``arithmetic``: "" when the article
    prints no ratio of its own, "agrees" when it matches its raw numbers within rounding, else
    "differs".
    """
    out = published.copy()
    points, los, his, stated, checks = [], [], [], [], []
    for _, row in out.iterrows():
        point, lo, hi = implied(row)
        s_point, s_lo, s_hi = stated_ratio(row)
        points.append(point)
        los.append(lo)
        his.append(hi)
        stated.append(s_point)
        if math.isnan(s_point):
            checks.append("")
        else:
            checks.append("agrees" if s_lo <= hi and lo <= s_hi else "differs")
    is_ratio = out["comparison"] == "ratio"
    out["implied_ratio"] = np.where(is_ratio, points, np.nan)
    out["implied_delta_us"] = np.where(out["comparison"] == "delta", points, np.nan)
    out["implied_lo"] = los
    out["implied_hi"] = his
    out["stated_ratio"] = stated
    out["arithmetic"] = checks
    return out


# --- the study's figures ------------------------------------------------------------------


@dataclass(frozen=True)
class OtherBaseline:
    """Ratios a summary row holds against a baseline other than native on its path.

    ``mode_column`` names, in each row, the study mode that baseline is (coldstart: a rootless
    engine's rootful engine; lb: ``docker-bridge``, what its ``direct-r1`` baseline is, one
    container on the default bridge dialled at its address). A published row whose baseline is
    that mode on the same path reads ``ratio`` (statistic -> point, lo, hi columns) and
    ``n_runs`` instead of the ratio to native.
    """

    mode_column: str
    ratio: dict[str, tuple[str, str, str]]
    n_runs: str


@dataclass(frozen=True)
class Source:
    """Where one benchmark's comparisons with native live in the processed outputs.

    ``files``: variant -> file stem under ``<processed_dir>/<benchmark>/`` (``"*"``: every
    variant, read from the summary's own ``variant`` column). ``ratio``/``delta_us``: statistic
    -> (point, lo, hi) columns of the ratio / difference to native on the same path.
    ``per_run``: variant -> (file stem, value column) of per-run values, which let a ratio
    between any two cells of a run (another baseline, another path) be compared here.
    ``defaults``: what an empty ``path``, ``variant`` or ``statistic`` of a published row means
    for this benchmark (the host benchmarks have the one path "host"; an article that names no
    statistic of a sysbench rate reports a median of runs).
    """

    files: dict[str, str]
    ratio: dict[str, tuple[str, str, str]]
    n_runs: str
    delta_us: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    per_run: dict[str, tuple[str, str]] = field(default_factory=dict)
    defaults: dict[str, str] = field(default_factory=dict)
    other_baseline: OtherBaseline | None = None
    # the directory under <processed_dir> its files are in, when a stage of another name
    # writes them (density: summarise-footprint writes data/processed/footprint)
    directory: str = ""


def _quantile_columns(kind: str, labels=("p50", "p99")) -> dict[str, tuple[str, str, str]]:
    if kind == "ratio":
        return {q: (f"ratio_{q}", f"ratio_{q}_lo", f"ratio_{q}_hi") for q in labels}
    return {q: (f"d_{q}_us", f"d_{q}_lo_us", f"d_{q}_hi_us") for q in labels}


_THROUGHPUT_RATIO = {"median": ("ratio", "ratio_lo", "ratio_hi")}
SOURCES: dict[str, Source] = {
    "throughput": Source(
        files={"tcp": "throughput_summary", "udp": "throughput_udp_summary"},
        ratio=_THROUGHPUT_RATIO,
        n_runs="ratio_n_runs",
        per_run={
            "tcp": ("throughput_per_run", "value"),
            "udp": ("throughput_udp_per_run", "received_gbps"),
        },
    ),
    "latency": Source(
        files={"*": "latency_summary"},
        ratio=_quantile_columns("ratio"),
        delta_us=_quantile_columns("delta"),
        n_runs="overhead_n_runs",
    ),
    "http": Source(
        files={"*": "http_summary"},
        ratio=_quantile_columns("ratio"),
        delta_us=_quantile_columns("delta"),
        n_runs="overhead_n_runs",
    ),
    # notebook 26 (pipeline.analysis.host): one row per variant and mode on the path "host";
    # a published row must name its variant (1thread, allthreads, compile).
    "cpu": Source(
        files={"*": "cpu_summary"},
        ratio=_THROUGHPUT_RATIO,
        n_runs="ratio_n_runs",
        defaults={"path": "host", "statistic": "median"},
    ),
    "memory": Source(
        files={"*": "memory_summary"},
        ratio=_THROUGHPUT_RATIO,
        n_runs="ratio_n_runs",
        defaults={"path": "host", "statistic": "median"},
    ),
    "disk": Source(
        files={"*": "disk_summary"},
        ratio=_THROUGHPUT_RATIO,
        n_runs="ratio_n_runs",
        defaults={"path": "host", "statistic": "median"},
    ),
    # notebook 27 (pipeline.analysis.coldstart): pooled p50/p95/p99 per mode on the path
    # "host"; ratios to native, and a rootless engine's to its rootful engine (rootful_mode).
    "coldstart": Source(
        files={"*": "coldstart_summary"},
        ratio=_quantile_columns("ratio", ("p50", "p95", "p99")),
        n_runs="overhead_n_runs",
        defaults={"path": "host"},
        other_baseline=OtherBaseline(
            "rootful_mode",
            {
                q: (f"rootful_ratio_{q}", f"rootful_ratio_{q}_lo", f"rootful_ratio_{q}_hi")
                for q in ("p50", "p95", "p99")
            },
            "rootful_n_runs",
        ),
    ),
    # notebook 31 (pipeline.analysis.lb): mode swarm-overlay, variants <balancer>-r<N>, each
    # compared with direct-r1 (no native): the median rate over runs, and the mean (ab's figure).
    "lb": Source(
        files={"*": "lb_summary"},
        ratio={},
        n_runs="ratio_n_runs",
        other_baseline=OtherBaseline(
            "baseline_mode",
            {
                "median": ("ratio", "ratio_lo", "ratio_hi"),
                "mean": ("ratio_mean", "ratio_mean_lo", "ratio_mean_hi"),
            },
            "ratio_n_runs",
        ),
    ),
    # notebook 28 (pipeline.analysis.footprint): one row per engine on the path "host",
    # variant "idle"; no native (an engine's own memory has none): the PSS cost per container
    # as a ratio to rootful Docker's (``reference``: docker-bridge), per-run slopes. The 004
    # article's "at 100 containers" is 100 x its per-container figure: the same ratio.
    "footprint": Source(
        files={"*": "footprint_summary"},
        ratio={},
        n_runs="ratio_n_runs",
        defaults={"path": "host", "variant": "idle", "statistic": "per_container"},
        other_baseline=OtherBaseline(
            "reference", {"per_container": ("ratio", "ratio_lo", "ratio_hi")}, "ratio_n_runs"
        ),
    ),
    # density (same notebook): containers reached over rootful Docker's; empty, with the
    # reason, when either engine stopped at the profile's cap in every run.
    "density": Source(
        files={"*": "density_summary"},
        ratio={},
        n_runs="ratio_n_runs",
        defaults={"path": "host", "variant": "idle", "statistic": "max"},
        other_baseline=OtherBaseline(
            "reference", {"max": ("ratio", "ratio_lo", "ratio_hi")}, "ratio_n_runs"
        ),
        directory="footprint",
    ),
    # notebook 30 (pipeline.analysis.orchestration): Docker Swarm and Kubernetes, variants
    # create, scale-10, scale-50, update-10 on the path "host"; the 000 article's baseline is
    # Kubernetes (``reference``: k8s-pod): Swarm's time over Kubernetes', per-run paired ratios.
    "orchestration": Source(
        files={"*": "orchestration_summary"},
        ratio={},
        n_runs="n_runs",
        defaults={"path": "host", "statistic": "median"},
        other_baseline=OtherBaseline(
            "reference", {"median": ("ratio", "ratio_lo", "ratio_hi")}, "ratio_n_runs"
        ),
    ),
}
CELL = ["environment", "mode", "path", "variant"]


@dataclass
class Study:
    """The processed outputs the replication reads: summaries and per-run values by
    (benchmark, variant key of ``Source.files``)."""

    summaries: dict[tuple[str, str], pd.DataFrame]
    per_run: dict[tuple[str, str], pd.DataFrame]
    processed_dir: Path

    def environments(self) -> list[str]:
        envs = {e for s in self.summaries.values() for e in s["environment"].astype(str)}
        return sorted(envs) or [""]


def load_study(processed_dir: Path | str, sources: dict[str, Source] = SOURCES) -> Study:
    """Read every summary (and per-run file) of ``sources`` that exists; a missing one is a
    stage that has not run, which the verdicts report, not an error."""
    root = Path(processed_dir)
    summaries, per_run = {}, {}
    for benchmark, source in sources.items():
        folder = root / (source.directory or benchmark)
        for key, stem in source.files.items():
            path = folder / f"{stem}.parquet"
            if path.is_file():
                frame = pd.read_parquet(path)
                if "variant" not in frame.columns:
                    frame["variant"] = key
                summaries[(benchmark, key)] = frame
        for key, (stem, column) in source.per_run.items():
            path = folder / f"{stem}.parquet"
            if path.is_file():
                frame = pd.read_parquet(path)
                per_run[(benchmark, key)] = frame.rename(columns={column: "value"})
    return Study(summaries, per_run, root)


def _text(value) -> str:
    """A summary's text cell as str: None and NaN (missing, read back from parquet) as ""."""
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def _reason_text(status: str, reason) -> str:
    reason = _text(reason)
    return reason if reason.startswith(status) else f"{status}: {reason}".rstrip(": ")


@dataclass
class Figure:
    """The study's side of one row: the comparison with its interval, or why there is none."""

    point: float = math.nan
    lo: float = math.nan
    hi: float = math.nan
    n_runs: int = 0
    reason: str = ""
    how: str = ""


def _cell(summary: pd.DataFrame, env: str, mode: str, path: str, variant: str) -> pd.Series | None:
    sel = summary[
        (summary["environment"].astype(str) == env)
        & (summary["mode"] == mode)
        & (summary["path"] == path)
        & (summary["variant"].astype(str) == variant)
    ]
    return None if sel.empty else sel.iloc[0]


def _not_ok(cell: pd.Series | None, mode: str, path: str, benchmark: str) -> str:
    if cell is None:
        return f"{mode} was not measured on the {path} path ({benchmark} data)"
    if cell["status"] != "ok":
        return f"{mode} on the {path} path: {_reason_text(cell['status'], cell['reason'])}"
    return ""


def study_figure(
    row: pd.Series,
    study: Study,
    env: str,
    sources: dict[str, Source] = SOURCES,
    confidence: float = 0.95,
) -> Figure:
    """The study's comparison for one published row (``reason`` set when there is none).

    Checks, in order: the article implies a comparison; the benchmark is in the study and its
    summary exists; the configuration maps to a study mode that was measured and not skipped;
    the article's baseline is native on the same path (else, for ratios with per-run values,
    the ratio between the two cells is taken over their common runs); the summary has
    the statistic; the interval exists.
    """
    if not row["comparison"]:
        return Figure(
            reason="the article gives no baseline to compare with (an absolute figure; "
            "absolute numbers are not compared across hardware)"
        )
    benchmark = row["benchmark"]
    source = sources.get(benchmark)
    if source is None:
        return Figure(reason=f"the {benchmark} benchmark is not in the study yet")
    row = _with_defaults(row, source)
    mode, path = row["mode"], row["path"]
    key = row["variant"] if row["variant"] in source.files else "*"
    if key not in source.files:
        return Figure(reason=f"the study has no {row['variant']} variant of {benchmark}")
    summary = study.summaries.get((benchmark, key))
    if summary is None:
        stem = source.files[key]
        return Figure(reason=f"no {benchmark}/{stem}.parquet in the processed data (stage not run)")
    if not mode:
        return Figure(reason=f"no study mode corresponds to {row['configuration']!r}")
    if key == "*" and not row["variant"] and "variant" in summary.columns:
        have = ", ".join(dict.fromkeys(summary["variant"].astype(str)))
        return Figure(
            reason=f"the article's figure names no {benchmark} variant (the study has {have})"
        )
    variant = row["variant"] or key
    cell = _cell(summary, env, mode, path, variant)
    if why := _not_ok(cell, mode, path, benchmark):
        return Figure(reason=why)
    if not row["baseline_mode"]:
        return Figure(
            reason=f"the article's baseline ({row['baseline_configuration']}) is not a study mode"
        )
    base_path = row["baseline_path"] or path
    ratio, delta, n_runs_column = source.ratio, source.delta_us, source.n_runs
    other = source.other_baseline
    if other and base_path == path and row["baseline_mode"] == _text(cell.get(other.mode_column)):
        ratio, delta, n_runs_column = other.ratio, {}, other.n_runs
    elif other and base_path == path and not source.ratio and not source.per_run:
        # the summary's ratios are to the other baseline only, and this row names it, but
        # the cell holds none: the baseline did not run beside it
        base = _cell(summary, env, row["baseline_mode"], path, variant)
        why = _not_ok(base, row["baseline_mode"], path, benchmark) or "no run measured both"
        return Figure(reason=f"the article compares with {row['baseline_mode']}: {why}")
    elif (row["baseline_mode"], base_path) != (BASELINE, path):
        return _cross_ratio(row, study, source, env, (key, variant), confidence)
    columns = (ratio if row["comparison"] == "ratio" else delta).get(row["statistic"])
    if columns is None:
        return Figure(reason=_no_statistic(row, source, benchmark))
    point, lo, hi = (float(cell[c]) for c in columns)
    n_runs = int(cell[n_runs_column]) if n_runs_column in cell.index else 0
    if math.isnan(lo) or math.isnan(hi) or not n_runs:
        why = "no interval"
        if math.isnan(point) and (q := _quantile(row["statistic"])) is not None:
            why = (f"{row['statistic']} is not reported: it needs {stats.min_samples(q):,} "
                   "samples per run")  # fmt: skip
        why = _reason_text(why, cell["reason"]) if _text(cell["reason"]) else why
        return Figure(point=point, n_runs=n_runs, reason=why)
    how = f"{benchmark} summary: {columns[0]} [{columns[1]}, {columns[2]}]"
    return Figure(point, lo, hi, n_runs, "", how)


def _quantile(statistic) -> float | None:
    """"p95" -> 0.95, "p99.9" -> 0.999; None for anything else."""
    text = _text(statistic)
    if not text.startswith("p"):
        return None
    try:
        q = float(text[1:]) / 100
    except ValueError:
        return None
    return q if 0 < q < 1 else None


def _with_defaults(row: pd.Series, source: Source) -> pd.Series:
    """``row`` with the source's meaning of its empty path, variant and statistic."""
    empty = {k: v for k, v in source.defaults.items() if not row[k]}
    if not empty:
        return row
    out = row.copy()
    for key, value in empty.items():
        out[key] = value
    return out


def _no_statistic(row: pd.Series, source: Source, benchmark: str) -> str:
    have = ", ".join(source.ratio if row["comparison"] == "ratio" else source.delta_us) or "none"
    if not row["statistic"]:
        return (
            f"the article names no statistic (the study's {benchmark} {row['comparison']} is "
            f"at {have})"
        )
    return (
        f"the study's {benchmark} summary has no {row['comparison']} at "
        f"{row['statistic']} (only {have})"
    )


def _cross_ratio(
    row: pd.Series,
    study: Study,
    source: Source,
    env: str,
    variant_key: tuple[str, str],
    confidence: float,
) -> Figure:
    """Ratio between the row's cell and the article's baseline cell (another mode or another
    path): the geometric mean of the per-run ratios over the runs both have, paired t interval."""
    key, variant = variant_key
    benchmark, mode, path = row["benchmark"], row["mode"], row["path"]
    base_mode, base_path = row["baseline_mode"], row["baseline_path"] or row["path"]
    said = f"the article compares with {base_mode} on the {base_path} path"
    per_run = study.per_run.get((benchmark, key))
    if row["comparison"] != "ratio" or per_run is None or row["statistic"] not in source.ratio:
        return Figure(
            reason=f"{said}; the study's {benchmark} summary holds only comparisons "
            "with native on the same path"
        )
    base_cell = _cell(study.summaries[(benchmark, key)], env, base_mode, base_path, variant)
    if why := _not_ok(base_cell, base_mode, base_path, benchmark):
        return Figure(reason=f"{said}: {why}")
    env_rows = per_run[per_run["environment"].astype(str) == env]
    pairs = []
    for label, (m, p) in (("cell", (mode, path)), ("base", (base_mode, base_path))):
        sel = env_rows[(env_rows["mode"] == m) & (env_rows["path"] == p)]
        pairs.append(sel[["run", "value"]].assign(mode=label))
    r = stats.ratio_ci(pd.concat(pairs), "cell", "base", confidence)
    if not r.n_runs:
        return Figure(reason=f"{said}: no run measured both")
    how = (
        f"{benchmark} per-run values: ratio to {base_mode} ({base_path}), geometric mean "
        "over common runs, paired t interval"
    )
    return Figure(r.ratio, r.lo, r.hi, r.n_runs, "", how)


def verdict(pub_lo: float, pub_hi: float, figure: Figure) -> str:
    """consistent / not consistent / not measurable here (see the module docstring)."""
    if figure.reason or math.isnan(figure.lo) or math.isnan(pub_lo):
        return NOT_MEASURABLE
    return CONSISTENT if pub_lo <= figure.hi and figure.lo <= pub_hi else NOT_CONSISTENT


def replicate(
    published: pd.DataFrame,
    study: Study,
    sources: dict[str, Source] = SOURCES,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """One row per published number (and environment of the study): the implied comparison,
    the study's figure with its interval, the verdict and its reason."""
    derived = derive(published)
    rows = []
    for env in study.environments():
        for _, typed in derived.iterrows():
            # The cell as the study reads it (a benchmark's defaults filled in), shown as such.
            source = sources.get(typed["benchmark"])
            row = _with_defaults(typed, source) if source else typed
            fig = study_figure(row, study, env, sources, confidence)
            rows.append(
                {
                    "environment": env,
                    **{c: row[c] for c in ("id", "article", "section", "configuration")},
                    **{c: row[c] for c in ("mode", "path", "benchmark", "variant", "statistic")},
                    **{c: row[c] for c in ("value", "value_high", "unit", "baseline_value")},
                    "comparison": row["comparison"],
                    "relation": row["relation"],
                    "implied_ratio": row["implied_ratio"],
                    "implied_delta_us": row["implied_delta_us"],
                    "implied_lo": row["implied_lo"],
                    "implied_hi": row["implied_hi"],
                    "arithmetic": row["arithmetic"],
                    "stated_ratio": row["stated_ratio"],
                    "study_point": fig.point,
                    "study_lo": fig.lo,
                    "study_hi": fig.hi,
                    "study_n_runs": fig.n_runs,
                    "study_source": fig.how,
                    "verdict": verdict(row["implied_lo"], row["implied_hi"], fig),
                    "reason": fig.reason,
                }
            )
    return pd.DataFrame(rows)


# --- the article's table ---------------------------------------------------------------------


def _fmt(value: float, comparison: str) -> str:
    if comparison == "ratio":
        return f"{value:.3f}"
    return f"{value:+.1f} us" if abs(value) < 1000 else f"{value:+.0f} us"


def published_text(r) -> str:
    """What the article implies, in the study's terms: "0.763", "1.18 to 1.25", "within ±10%"."""
    if not r.comparison:
        return ""
    if r.relation == "within":
        return f"within ±{r.value}{'%' if r.unit.startswith('%') else ' us'}"
    point = r.implied_ratio if r.comparison == "ratio" else r.implied_delta_us
    span = f"{_fmt(r.implied_lo, r.comparison)} to {_fmt(r.implied_hi, r.comparison)}"
    if r.value_high:
        return span
    # A ratio of two short numbers (0.14 / 0.12) is less precise than its digits suggest: show
    # the range the verdict used whenever it is wider than +-0.25%.
    if (r.implied_hi - r.implied_lo) > 0.005 * max(abs(point), 1e-9):
        return f"{_fmt(point, r.comparison)} (rounding: {span})"
    return _fmt(point, r.comparison)


def study_text(r) -> str:
    if math.isnan(r.study_point):
        return ""
    if math.isnan(r.study_lo):
        return _fmt(r.study_point, r.comparison)
    return (
        f"{_fmt(r.study_point, r.comparison)} "
        f"[{_fmt(r.study_lo, r.comparison)}, {_fmt(r.study_hi, r.comparison)}]"
    )


def _where(r) -> str:
    parts = [r.mode or "-"]
    if r.path:
        parts.append(r.path)
    if r.variant:
        parts.append(r.variant)
    if r.statistic:
        parts.append(r.statistic)
    return ", ".join(parts)


def _note(r) -> str:
    parts = [r.reason] if r.reason else []
    if r.arithmetic == "differs":
        parts.append(
            f"the article prints {r.stated_ratio:.2f} but its own numbers give "
            f"{r.implied_ratio:.3f}"
        )
    return "; ".join(parts)


def article_table(result: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """ID | Configuration | Study cell | Comparison | Published | Study [CI] | Runs | Verdict |
    Note: one row per published number (and environment); the ID starts with the article's
    number and is the row's id in published.csv."""
    conf = f"{confidence:.0%}"
    table = pd.DataFrame(
        {
            "ID": result["id"],
            "Configuration (article's words)": result["configuration"],
            "Study mode, path, variant, statistic": [_where(r) for r in result.itertuples()],
            "Comparison": [
                {"ratio": "ratio", "delta": "difference"}.get(c, "none")
                for c in result["comparison"]
            ],
            "Published": [published_text(r) for r in result.itertuples()],
            f"Study [{conf} CI]": [study_text(r) for r in result.itertuples()],
            "Runs": [str(n) if n else "" for n in result["study_n_runs"]],
            "Verdict": result["verdict"],
            "Note": [_note(r) for r in result.itertuples()],
        }
    )
    if result["environment"].nunique() > 1:
        table.insert(0, "Environment", result["environment"].to_numpy())
    return table


def table_caption(result: pd.DataFrame, confidence: float = 0.95) -> str:
    counts = result["verdict"].value_counts()
    tally = ", ".join(f"{int(counts.get(v, 0))} {v}" for v in VERDICTS)
    return (
        "Every headline number of the five published articles (data/reference/published.csv, "
        "each with a verbatim quote) beside this study's figure. Absolute numbers are not "
        "compared, because the hardware differs: only the comparison each article implies, a "
        "ratio to its baseline or a difference in microseconds, derived from its raw numbers. "
        "Published: that comparison; a printed number stands for every value that rounds to it. "
        f"Study: the same comparison from this study's summaries with its {confidence:.0%} "
        "interval (t over runs). Verdict: consistent when the "
        "published comparison overlaps the study's interval, not consistent when it lies "
        f"outside it, not measurable here with the reason. {tally}."
    )


def counts(result: pd.DataFrame, by: str = "article") -> pd.DataFrame:
    """Verdict counts per ``by`` (article or benchmark), every verdict a column."""
    table = result.groupby([by, "verdict"]).size().unstack(fill_value=0)
    table = table.reindex(columns=list(VERDICTS), fill_value=0)
    table.loc["all"] = table.sum()
    return table


def headline(result: pd.DataFrame) -> str:
    """Deterministic digest (checked by nbval): the tally, then every measurable row."""
    tally = result["verdict"].value_counts()
    lines = [", ".join(f"{v}: {int(tally.get(v, 0))}" for v in VERDICTS)]
    for r in result.itertuples():
        if r.verdict == NOT_MEASURABLE:
            continue
        env = f"{r.environment} " if r.environment else ""
        lines.append(
            f"{env}{r.id}: published {published_text(r)}, study {study_text(r)} "
            f"({r.study_n_runs} runs): {r.verdict}"
        )
    return "\n".join(lines)


def findings(result: pd.DataFrame) -> str:
    """Markdown: the tally and what is not measurable here, grouped by reason."""
    tally = result["verdict"].value_counts()
    out = [
        f"- **{int(tally.get(CONSISTENT, 0))}** published comparisons are consistent with this "
        f"study, **{int(tally.get(NOT_CONSISTENT, 0))}** are not, and "
        f"**{int(tally.get(NOT_MEASURABLE, 0))}** are not measurable here."
    ]
    off = result[result["verdict"] == NOT_CONSISTENT]
    for r in off.itertuples():
        side = "above" if r.implied_lo > r.study_hi else "below"
        out.append(
            f"- {r.id} ({r.configuration}): the article's {published_text(r)} lies {side} the "
            f"study's interval {study_text(r)}."
        )
    why = result.loc[result["verdict"] == NOT_MEASURABLE, "reason"].map(_reason_group)
    for reason, n in why.value_counts().sort_index().items():
        out.append(f"- not measurable, {n} x: {reason}")
    return "\n".join(out)


def _reason_group(reason: str) -> str:
    """The reason without the row's own detail, so alike reasons count together."""
    for lead in ("the article's baseline (", "no study mode corresponds to"):
        if reason.startswith(lead):
            return lead.rstrip(" (") + " ..."
    return reason
