"""Replicate the five published articles: every claim, the relation it makes, and a verdict
that can go either way.

``data/reference/published.csv`` holds every claim of the articles in ``shared/seeds/``, typed
once with a verbatim quote (its README says what each column means). Each row states the
relation the claim makes (``relation``):

- ``=``: the value, within a stated ``tolerance`` on the comparison's own scale (the study's
  equivalence margin for a ratio, microseconds for a difference);
- ``within``: a range ("18-25%", "2-3x") or a bound around parity ("within 10%");
- ``<`` / ``>``: a one-sided bound ("under 2%" on a slowdown is a ratio ``>`` 0.98), or, with
  the unit ``ordering``, an ordering of two study cells ("HAProxy below Swarm's balancer":
  their ratio ``<`` 1).

A printed number stands for every value that rounds to it, so each region also covers its
rounding; the region is on the scale that carries over between machines: added microseconds
for latency (a percentage of the article's own native round trip is turned into microseconds
with the article's own baseline), ratios where both sides are bound by the same resource.

Verdicts, from the study's 95% interval against the claim's region:

- **reproduced**: the interval lies inside the region;
- **contradicted**: the interval lies entirely outside it;
- **not resolved**: it straddles a boundary; a wider interval (fewer runs) can only move a
  row here, never into reproduced;
- **not transferable here**: the row's ``not_transferable`` names the mechanism that differs
  (a NIC-bound native in the article against the lab's CPU-bound veth native);
- **not measured**: the row's ``why_not`` says why no profile can measure it, or the data at
  hand lack the cell (the reason, and the ``profile`` that measures it).

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
REPRODUCED = "reproduced"
CONTRADICTED = "contradicted"
NOT_RESOLVED = "not resolved"
NOT_TRANSFERABLE = "not transferable here"
NOT_MEASURED = "not measured"
VERDICTS = (REPRODUCED, CONTRADICTED, NOT_RESOLVED, NOT_TRANSFERABLE, NOT_MEASURED)
# Verdicts the study's interval decided.
DECIDED = (REPRODUCED, CONTRADICTED, NOT_RESOLVED)

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
    "tolerance",
    "value",
    "value_high",
    "unit",
    "baseline_value",
    "baseline_unit",
    "baseline_configuration",
    "baseline_mode",
    "baseline_path",
    "baseline_variant",
    "stated",
    "stated_unit",
    "quote",
    "baseline_quote",
    "headline",
    "profile",
    "not_transferable",
    "why_not",
    "note",
]
NUMERIC = ("tolerance", "value", "value_high", "baseline_value", "stated")
COMPARISONS = ("ratio", "delta", "")
RELATIONS = ("=", "within", "<", ">")
PROFILES = ("demo", "study", "publication")
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
# An ordering of two study cells: no number, the relation against parity.
ORDERING = "ordering"


# --- the published claims ------------------------------------------------------------------


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
    if r.headline not in ("", "yes"):
        out.append(f"headline {r.headline!r} is not 'yes' or empty")
    if r.profile not in ("", *PROFILES):
        out.append(f"profile {r.profile!r} is not one of {PROFILES}")
    if r.why_not and r.not_transferable:
        out.append("a row is either not measurable (why_not) or not transferable, not both")
    if r.why_not:
        return out  # never compared: nothing else needs to be interpretable
    if not r.comparison:
        out.append("no comparison and no why_not: say why the row can never get a verdict")
        return out
    if r.unit == ORDERING:
        if r.relation not in ("<", ">") or r.value:
            out.append("an ordering is '<' or '>' against parity, with no value")
    elif not r.value and not r.not_transferable:
        out.append("no value to compare")
    elif r.value and not _knows_unit(r.unit, bool(r.baseline_value), r.comparison):
        out.append(f"unit {r.unit!r} cannot give a {r.comparison} (baseline {r.baseline_value!r})")
    if r.relation == "=" and r.value and not r.tolerance:
        out.append("'=' needs a tolerance")
    if r.comparison == "delta" and r.unit in RATIO_UNITS and r.baseline_unit not in TIME_UNITS:
        out.append("a percentage as a difference needs the baseline's time unit")
    if r.stated and r.stated_unit not in RATIO_UNITS:
        out.append(f"stated_unit {r.stated_unit!r} is not one of {list(RATIO_UNITS)}")
    if not r.profile:
        out.append("no profile: name the profile that measures it, or say why_not")
    return out


def _knows_unit(unit: str, has_baseline: bool, comparison: str) -> bool:
    if unit in BOUND_UNITS:
        return BOUND_UNITS[unit][0] == comparison or (comparison == "delta" and has_baseline)
    if comparison == "ratio":
        return unit in RATIO_UNITS or has_baseline
    return unit in DELTA_UNITS or (has_baseline and (unit in TIME_UNITS or unit in RATIO_UNITS))


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
    cover rounding: every value that rounds to what the article printed. A percentage asked as
    a difference (``comparison`` delta) is that share of the article's own baseline, in
    microseconds.
    """
    nan = (math.nan, math.nan, math.nan)
    if not row["comparison"] or not row["value"] or row["unit"] == ORDERING:
        return nan
    low_text, high_text = row["value"], row["value_high"] or row["value"]
    unit = row["unit"]
    as_share = row["comparison"] == "delta" and unit in {**RATIO_UNITS, **BOUND_UNITS}
    if as_share:
        return _share_as_delta(row)
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


def _share_as_delta(row: pd.Series) -> tuple[float, float, float]:
    """A percentage of the article's baseline time as microseconds: "+58% at p50" of 0.12 ms."""
    scale = TIME_UNITS[row["baseline_unit"]]
    base = float(row["baseline_value"])
    b_lo, b_hi = _span(row["baseline_value"])
    low_text, high_text = row["value"], row["value_high"] or row["value"]
    if row["unit"] in BOUND_UNITS:
        width = (float(low_text) + half_unit(low_text)) / 100.0 * b_hi * scale
        return math.nan, -width, width
    convert = RATIO_UNITS[row["unit"]]
    shares = [convert(v) - 1.0 for t in (low_text, high_text) for v in _span(t)]
    ends = [s * b * scale for s in shares for b in (b_lo, b_hi)]
    point = (convert((float(low_text) + float(high_text)) / 2.0) - 1.0) * base * scale
    return point, min(ends), max(ends)


def claim_region(row: pd.Series) -> tuple[float, float]:
    """``(lo, hi)``: the values of the study's comparison the claim allows (infinite on the
    open side of ``<`` and ``>``); NaN when the row states no comparison."""
    if not row["comparison"] or row["why_not"]:
        return math.nan, math.nan
    parity = 1.0 if row["comparison"] == "ratio" else 0.0
    relation = row["relation"]
    if row["unit"] == ORDERING:
        return (-math.inf, parity) if relation == "<" else (parity, math.inf)
    _, lo, hi = implied(row)
    if math.isnan(lo):
        return math.nan, math.nan
    if relation == "=":
        tol = float(row["tolerance"] or 0.0)
        return lo - tol, hi + tol
    if relation == "<":
        return -math.inf, hi
    if relation == ">":
        return lo, math.inf
    return lo, hi


def stated_ratio(row: pd.Series) -> tuple[float, float, float]:
    """``(point, lo, hi)`` of the ratio the article itself prints beside the raw numbers."""
    if not row["stated"]:
        return math.nan, math.nan, math.nan
    convert = RATIO_UNITS[row["stated_unit"]]
    ends = [convert(v) for v in _span(row["stated"])]
    return convert(float(row["stated"])), min(ends), max(ends)


def derive(published: pd.DataFrame) -> pd.DataFrame:
    """``published`` with the implied comparison, the claim's region and the article's own
    arithmetic check.

    Adds ``implied_ratio`` or ``implied_delta_us`` (the point), ``implied_lo``/``implied_hi``
    (its range, rounding included), ``claim_lo``/``claim_hi`` (the region the relation allows),
    ``stated_ratio`` and ``arithmetic``: "" when the article prints no ratio of its own,
    "agrees" when it matches its raw numbers within rounding, else "differs".
    """
    out = published.copy()
    points, los, his, c_los, c_his, stated, checks = [], [], [], [], [], [], []
    for _, row in out.iterrows():
        point, lo, hi = implied(row)
        c_lo, c_hi = claim_region(row)
        s_point, s_lo, s_hi = stated_ratio(row)
        points.append(point)
        los.append(lo)
        his.append(hi)
        c_los.append(c_lo)
        c_his.append(c_hi)
        stated.append(s_point)
        if math.isnan(s_point) or math.isnan(lo):
            checks.append("")
        else:
            checks.append("agrees" if s_lo <= hi and lo <= s_hi else "differs")
    out["implied_ratio"] = np.where(out["comparison"] == "ratio", points, np.nan)
    out["implied_delta_us"] = np.where(out["comparison"] == "delta", points, np.nan)
    out["implied_lo"] = los
    out["implied_hi"] = his
    out["claim_lo"] = c_los
    out["claim_hi"] = c_his
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
    between any two cells of a run (another mode, path or variant) be compared here, for the
    statistics ``per_run_statistics`` (what one run's value summarises).
    ``defaults``: what an empty ``path``, ``variant`` or ``statistic`` of a published row means
    for this benchmark (the host benchmarks have the one path "host"; an article that names no
    statistic of a sysbench rate reports a median of runs).
    """

    files: dict[str, str]
    ratio: dict[str, tuple[str, str, str]]
    n_runs: str
    delta_us: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    per_run: dict[str, tuple[str, str]] = field(default_factory=dict)
    per_run_statistics: tuple[str, ...] = ("median",)
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
    # a published row must name its variant (1thread, allthreads, compile). Its per-run
    # medians give a ratio between two modes (004's rootless layer against overlay2).
    "cpu": Source(
        files={"*": "cpu_summary"},
        ratio=_THROUGHPUT_RATIO,
        n_runs="ratio_n_runs",
        per_run={"*": ("cpu_per_run", "value")},
        defaults={"path": "host", "statistic": "median"},
    ),
    "memory": Source(
        files={"*": "memory_summary"},
        ratio=_THROUGHPUT_RATIO,
        n_runs="ratio_n_runs",
        per_run={"*": ("memory_per_run", "value")},
        defaults={"path": "host", "statistic": "median"},
    ),
    "disk": Source(
        files={"*": "disk_summary"},
        ratio=_THROUGHPUT_RATIO,
        n_runs="ratio_n_runs",
        per_run={"*": ("disk_per_run", "value")},
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
    # compared with direct-r1 (no native): the median rate over runs, and the mean (ab's figure);
    # two balancers with each other through the per-run rates.
    "lb": Source(
        files={"*": "lb_summary"},
        ratio={},
        n_runs="ratio_n_runs",
        # one wrk run's rate per (run, variant): an ordering of two balancers is their ratio
        per_run={"*": ("lb_per_run", "rps")},
        per_run_statistics=("mean", "median"),
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

    Checks, in order: the row can be measured at all (no ``why_not``) and states a
    comparison; the benchmark is in the study and its summary exists; the configuration maps to
    a study mode that was measured and not skipped; the article's baseline is native on the
    same path or the summary's own other baseline (else, for ratios with per-run values, the
    ratio between the two cells is taken over their common runs); the summary has the
    statistic; the interval exists.
    """
    if row["why_not"]:
        return Figure(reason=row["why_not"])
    if not row["comparison"]:
        return Figure(reason="the article states no comparison")
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
    base_variant = row["baseline_variant"] or variant
    ratio, delta, n_runs_column = source.ratio, source.delta_us, source.n_runs
    other = source.other_baseline
    same_cell_kind = base_path == path and base_variant == variant
    if other and same_cell_kind and row["baseline_mode"] == _text(cell.get(other.mode_column)):
        ratio, delta, n_runs_column = other.ratio, {}, other.n_runs
    elif other and same_cell_kind and not source.ratio and not source.per_run:
        # the summary's ratios are to the other baseline only, and this row names it, but
        # the cell holds none: the baseline did not run beside it
        base = _cell(summary, env, row["baseline_mode"], path, variant)
        why = _not_ok(base, row["baseline_mode"], path, benchmark) or "no run measured both"
        return Figure(reason=f"the article compares with {row['baseline_mode']}: {why}")
    elif (row["baseline_mode"], base_path, base_variant) != (BASELINE, path, variant):
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
    """Ratio between the row's cell and the article's baseline cell (another mode, path or
    variant): the geometric mean of the per-run ratios over the runs both have, paired t
    interval."""
    key, variant = variant_key
    benchmark, mode, path = row["benchmark"], row["mode"], row["path"]
    base_mode, base_path = row["baseline_mode"], row["baseline_path"] or row["path"]
    base_variant = row["baseline_variant"] or variant
    where = f"the {base_path} path" + (f", {base_variant}" if base_variant != variant else "")
    said = f"the article compares with {base_mode} on {where}"
    per_run = study.per_run.get((benchmark, key))
    usable = row["statistic"] in source.per_run_statistics
    if row["comparison"] != "ratio" or per_run is None or not usable:
        return Figure(
            reason=f"{said}; the study's {benchmark} summary holds only comparisons "
            "with native on the same path"
        )
    base_cell = _cell(study.summaries[(benchmark, key)], env, base_mode, base_path, base_variant)
    if why := _not_ok(base_cell, base_mode, base_path, benchmark):
        return Figure(reason=f"{said}: {why}")
    env_rows = per_run[per_run["environment"].astype(str) == env]
    pairs = []
    for label, (m, p, v) in (
        ("cell", (mode, path, variant)),
        ("base", (base_mode, base_path, base_variant)),
    ):
        sel = env_rows[(env_rows["mode"] == m) & (env_rows["path"] == p)]
        if "variant" in sel.columns:
            sel = sel[sel["variant"].astype(str) == v]
        pairs.append(sel[["run", "value"]].assign(mode=label))
    r = stats.ratio_ci(pd.concat(pairs), "cell", "base", confidence)
    if not r.n_runs:
        return Figure(reason=f"{said}: no run measured both")
    how = (
        f"{benchmark} per-run values: ratio to {base_mode} ({base_path}"
        f"{', ' + base_variant if base_variant != variant else ''}), geometric mean over "
        "common runs, paired t interval"
    )
    return Figure(r.ratio, r.lo, r.hi, r.n_runs, "", how)


def verdict(claim_lo: float, claim_hi: float, figure: Figure, not_transferable: str = "") -> str:
    """The verdict of one row (see the module docstring): the region the claim allows,
    ``[claim_lo, claim_hi]``, against the study's interval ``[figure.lo, figure.hi]``.

    Reproduced needs the whole interval inside the region, so widening the interval around the
    same estimate can turn reproduced or contradicted into not resolved, never the reverse.
    """
    if not_transferable:
        return NOT_TRANSFERABLE
    if figure.reason or math.isnan(figure.lo) or math.isnan(figure.hi) or math.isnan(claim_lo):
        return NOT_MEASURED
    if claim_lo <= figure.lo and figure.hi <= claim_hi:
        return REPRODUCED
    if figure.hi < claim_lo or figure.lo > claim_hi:
        return CONTRADICTED
    return NOT_RESOLVED


def _why(row: pd.Series, figure: Figure, decided: str) -> str:
    """Why a row has no decided verdict: the mechanism that differs, or what is missing and
    the profile that measures it."""
    if decided == NOT_TRANSFERABLE:
        return row["not_transferable"]
    if decided != NOT_MEASURED:
        return ""
    reason = figure.reason or "no interval"
    if row["why_not"] or not row["profile"]:
        return reason
    missing = ("was not measured" in reason or "is not reported" in reason
               or reason.startswith("no "))  # fmt: skip
    return f"{reason}; the {row['profile']} profile measures it" if missing else reason


def replicate(
    published: pd.DataFrame,
    study: Study,
    sources: dict[str, Source] = SOURCES,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """One row per published claim (and environment of the study): the claim's region, the
    study's figure with its interval, the verdict and why."""
    derived = derive(published)
    rows = []
    for env in study.environments():
        for _, typed in derived.iterrows():
            # The cell as the study reads it (a benchmark's defaults filled in), shown as such.
            source = sources.get(typed["benchmark"])
            row = _with_defaults(typed, source) if source and not typed["why_not"] else typed
            fig = study_figure(row, study, env, sources, confidence)
            decided = verdict(row["claim_lo"], row["claim_hi"], fig, row["not_transferable"])
            rows.append(
                {
                    "environment": env,
                    **{c: row[c] for c in ("id", "article", "section", "metric")},
                    "configuration": row["configuration"],
                    **{c: row[c] for c in ("mode", "path", "benchmark", "variant", "statistic")},
                    **{c: row[c] for c in ("value", "value_high", "unit", "baseline_value")},
                    "baseline_mode": row["baseline_mode"],
                    "baseline_variant": row["baseline_variant"],
                    "comparison": row["comparison"],
                    "relation": row["relation"],
                    "tolerance": row["tolerance"],
                    "headline": row["headline"] == "yes",
                    "quote": row["quote"],
                    "implied_ratio": row["implied_ratio"],
                    "implied_delta_us": row["implied_delta_us"],
                    "implied_lo": row["implied_lo"],
                    "implied_hi": row["implied_hi"],
                    "claim_lo": row["claim_lo"],
                    "claim_hi": row["claim_hi"],
                    "arithmetic": row["arithmetic"],
                    "stated_ratio": row["stated_ratio"],
                    "study_point": fig.point,
                    "study_lo": fig.lo,
                    "study_hi": fig.hi,
                    "study_n_runs": fig.n_runs,
                    "study_source": fig.how,
                    "verdict": decided,
                    "reason": _why(row, fig, decided),
                }
            )
    return pd.DataFrame(rows)


# --- the article's table ---------------------------------------------------------------------


def _fmt(value: float, comparison: str) -> str:
    if comparison == "ratio":
        return f"{value:.3f}"
    return f"{value:+.1f} us" if abs(value) < 1000 else f"{value:+.0f} us"


def published_text(r) -> str:
    """The claim as a region of the study's comparison: "= 0.763 ±0.05 (0.708 to 0.818)",
    "within 1.175 to 1.255", "> 0.975", "< 1 (an ordering)"."""
    if not r.comparison or math.isnan(r.claim_lo):
        return ""
    c = r.comparison
    if r.unit == ORDERING:
        return f"{r.relation} {'1' if c == 'ratio' else '0 us'} (an ordering)"
    if r.relation == "<":
        return f"< {_fmt(r.claim_hi, c)}"
    if r.relation == ">":
        return f"> {_fmt(r.claim_lo, c)}"
    span = f"{_fmt(r.claim_lo, c)} to {_fmt(r.claim_hi, c)}"
    if r.relation == "within":
        return f"within {span}"
    point = r.implied_ratio if c == "ratio" else r.implied_delta_us
    tol = f"{float(r.tolerance):g}" + ("" if c == "ratio" else " us")
    return f"= {_fmt(point, c)} ±{tol} ({span})"


def region_text(r) -> str:
    """The claim's region alone, as prose reads it: "0.940 to 1.060", "above 0.975"."""
    if not r.comparison or math.isnan(r.claim_lo):
        return ""
    if math.isinf(r.claim_lo) and math.isinf(r.claim_hi):
        return "any value"
    if math.isinf(r.claim_lo):
        return f"below {_fmt(r.claim_hi, r.comparison)}"
    if math.isinf(r.claim_hi):
        return f"above {_fmt(r.claim_lo, r.comparison)}"
    return f"{_fmt(r.claim_lo, r.comparison)} to {_fmt(r.claim_hi, r.comparison)}"


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
    if r.baseline_mode and r.comparison:
        against = r.baseline_mode + (f" {r.baseline_variant}" if r.baseline_variant else "")
        parts.append(f"vs {against}")
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
    """ID | Headline | Configuration | Study cell | Scale | Claim | Study [CI] | Runs | Verdict |
    Why: one row per published claim (and environment); the ID starts with the article's
    number and is the row's id in published.csv."""
    conf = f"{confidence:.0%}"
    table = pd.DataFrame(
        {
            "ID": result["id"],
            "Headline": np.where(result["headline"], "yes", ""),
            "Configuration (article's words)": result["configuration"],
            "Study cell": [_where(r) for r in result.itertuples()],
            "Scale": [
                {"ratio": "ratio", "delta": "added us"}.get(c, "none")
                for c in result["comparison"]
            ],
            "Claim": [published_text(r) for r in result.itertuples()],
            f"Study [{conf} CI]": [study_text(r) for r in result.itertuples()],
            "Runs": [str(n) if n else "" for n in result["study_n_runs"]],
            "Verdict": result["verdict"],
            "Why": [_note(r) for r in result.itertuples()],
        }
    )
    if result["environment"].nunique() > 1:
        table.insert(0, "Environment", result["environment"].to_numpy())
    return table


def table_caption(result: pd.DataFrame, confidence: float = 0.95) -> str:
    counts = result["verdict"].value_counts()
    tally = ", ".join(f"{int(counts.get(v, 0))} {v}" for v in VERDICTS)
    return (
        "Every claim of the five published articles (data/reference/published.csv, each with a "
        "verbatim quote) as the relation it makes, beside this study's figure. Scale: latency "
        "as added microseconds, other comparisons as ratios; absolute numbers are never "
        "compared. Claim: the region the claim allows (= within its stated tolerance, a range, "
        "or a bound), rounding of the printed numbers included. "
        f"Study: the same comparison with its {confidence:.0%} interval (t over runs). "
        "Verdict: reproduced when the interval lies inside the region, contradicted when it "
        "lies outside it, not resolved when it straddles a boundary; not transferable here "
        "names the mechanism that differs between the article's machine and this one; not "
        f"measured says why. {tally}."
    )


def counts(result: pd.DataFrame, by: str = "article") -> pd.DataFrame:
    """Verdict counts per ``by`` (article or benchmark), every verdict a column."""
    table = result.groupby([by, "verdict"]).size().unstack(fill_value=0)
    table = table.reindex(columns=list(VERDICTS), fill_value=0)
    table.loc["all"] = table.sum()
    return table


def headline(result: pd.DataFrame) -> str:
    """Deterministic digest (checked by nbval): the tally, then every decided row."""
    tally = result["verdict"].value_counts()
    lines = [", ".join(f"{v}: {int(tally.get(v, 0))}" for v in VERDICTS)]
    for r in result.itertuples():
        if r.verdict not in DECIDED:
            continue
        env = f"{r.environment} " if r.environment else ""
        lines.append(
            f"{env}{r.id}: claim {published_text(r)}, study {study_text(r)} "
            f"({r.study_n_runs} runs): {r.verdict}"
        )
    return "\n".join(lines)


def findings(result: pd.DataFrame) -> str:
    """Markdown: the tally, each decided row against its claim, and why the rest have none,
    grouped by reason."""
    tally = result["verdict"].value_counts()
    out = ["- " + ", ".join(f"**{int(tally.get(v, 0))}** {v}" for v in VERDICTS) + "."]
    for r in result[result["verdict"].isin(DECIDED)].itertuples():
        out.append(
            f"- {r.id} ({r.configuration}): claim {published_text(r)}, study "
            f"{study_text(r)}: {r.verdict}."
        )
    for verdict_ in (NOT_TRANSFERABLE, NOT_MEASURED):
        why = result.loc[result["verdict"] == verdict_, "reason"].map(_reason_group)
        for reason, n in why.value_counts().sort_index().items():
            out.append(f"- {verdict_}, {n} x: {reason}")
    return "\n".join(out)


def _reason_group(reason: str) -> str:
    """The reason without the row's own detail, so alike reasons count together."""
    for lead in ("the article's baseline (", "no study mode corresponds to"):
        if reason.startswith(lead):
            return lead.rstrip(" (") + " ..."
    return reason
