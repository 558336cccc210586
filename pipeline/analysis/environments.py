"""Two environments side by side (the embedded lab against a VM, bare metal against a cloud):
for each benchmark, path, variant and statistic, two comparisons of the first environment
listed (the reference) with each other one.

- **native**: native's per-run values in the environment against native's in the reference,
  ``exp(mean log env - mean log reference)`` ("is the VM slower than bare metal?");
- **overhead**: a mode's per-run log ratio to native (over the runs of one environment where
  both were measured, as every summary computes it) in the environment against the same in the
  reference: the ratio of the two environments' ratios to native ("does the VM change what
  Docker costs?"). Below 1 for a rate (above 1 for a time) means a larger overhead.

The two environments are separate campaigns whose run numbers share nothing, so each is a
difference of two independent means on the log scale: Welch's t interval and tests
(``stats.welch_equivalence``), the verdict rule of every table (TOST against the benchmark's
margin from ``common.margins``, then the difference test), and the table's p-values adjusted
together (``stats.adjust_verdicts``).

The per-run values are the ones each benchmark's summary uses (``engine.per_run``), the
statistic its readers quote (``engine.relative``): iperf3's receiver-side TCP total, the
per-run p50 of latency and HTTP round trips, the per-run median of the host benchmarks'
per-second rates, compile time and system-call costs (cpu, memory, disk, syscall). Left
out: UDP throughput (at a fixed offered rate its figure of merit is the loss, judged in
percentage points), tail percentiles, the Internet path (judged on added microseconds, and its
emulated WAN is not the environment's own), and the benchmarks without a margin (cold start,
footprint, density, orchestration, load balancing).
"""

from __future__ import annotations

from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd

from pipeline.analysis import engine, stats, tables

BASELINE = "native"
PATHS = ("dc", "local", "host")
KEYS = ["benchmark", "path", "variant", "metric"]
VALUE_COLUMNS = [*KEYS, "environment", "mode", "run", "value", "higher_is_better"]
COLUMNS = [
    *KEYS, "mode", "comparison", "reference", "environment", "n_reference", "n_environment",
    "reference_ratio", "environment_ratio", "ratio", "lo", "hi", "lo_eq", "hi_eq", "margin",
    "tost_p", "diff_p", "sd_log", "df", "resolvable", "n_runs", "tost_reason", "verdict",
    "higher_is_better",
]  # fmt: skip
# What each verdict says in the table, per comparison: "overhead" on native's ratio means the
# environment is slower, on a ratio of overheads that the mode costs more there.
WORDS = {
    "native": {"overhead": "slower", "faster": "faster",
               "equivalent (small overhead)": "equivalent (slightly slower)"},
    "overhead": {"overhead": "more overhead", "faster": "less overhead",
                 "equivalent (small overhead)": "equivalent (slightly more overhead)",
                 "equivalent (slightly faster)": "equivalent (slightly less overhead)"},
}  # fmt: skip


def per_run_values(raw_dir: Path | str, paths=PATHS) -> pd.DataFrame:
    """Every covered benchmark's per-run values, across every environment under ``raw_dir``:
    ``VALUE_COLUMNS`` (``higher_is_better`` is the statistic's direction). Covered: the
    statistic each benchmark's readers quote (``engine.relative``), where it has a margin."""
    values = engine.relative(engine.per_run(raw_dir), headline=True)
    keep = values["path"].isin(paths) & (values["value"] > 0)
    keep &= values["benchmark"].map(lambda b: engine.MEASURES[b].margin is not None)
    return values.loc[keep, VALUE_COLUMNS].reset_index(drop=True)


def margin_of(benchmark: str, margins: dict[str, float]) -> float | None:
    """The benchmark's equivalence margin from ``common.margins`` (None: it has none)."""
    measure = engine.MEASURES.get(benchmark)
    key = measure.margin if measure is not None else None
    return margins.get(key) if key else None


def _log_values(part: pd.DataFrame, mode: str) -> pd.Series:
    """Per-run log values of one mode, indexed by run (a run's value once)."""
    sel = part[part["mode"] == mode].groupby("run")["value"].first()
    return np.log(sel.astype(float))


def _log_ratios(part: pd.DataFrame, mode: str) -> pd.Series:
    """Per-run ``log(mode) - log(native)`` over the runs where both were measured."""
    return (_log_values(part, mode) - _log_values(part, BASELINE)).dropna()


def _row(key, mode, comparison, reference, environment, ref, env, margin, hib, confidence):
    eq = stats.welch_equivalence(env.to_numpy(), ref.to_numpy(), margin, confidence, hib)
    t = eq.tost
    as_ratio = (lambda d: float(np.exp(d.mean())) if d.size else float("nan")) if (
        comparison == "overhead") else (lambda d: float("nan"))  # fmt: skip
    return {
        **dict(zip(KEYS, key, strict=True)), "mode": mode, "comparison": comparison,
        "reference": reference, "environment": environment, "n_reference": int(ref.size),
        "n_environment": int(env.size), "reference_ratio": as_ratio(ref),
        "environment_ratio": as_ratio(env), "ratio": eq.ratio, "lo": eq.lo, "hi": eq.hi,
        "lo_eq": eq.lo_eq, "hi_eq": eq.hi_eq, "margin": margin, "tost_p": t.p_value,
        "diff_p": t.diff_p, "sd_log": t.sd_log, "df": t.df, "resolvable": t.resolvable,
        "n_runs": t.n_runs,
        "tost_reason": t.reason, "verdict": eq.verdict, "higher_is_better": hib,
    }  # fmt: skip


def compare(
    values: pd.DataFrame,
    environments: list[str],
    margins: dict[str, float],
    confidence: float = 0.95,
    multiplicity: str = "holm",
) -> pd.DataFrame:
    """The comparison table (``COLUMNS``): the first of ``environments`` is the reference, each
    other one is compared with it. One ``native`` row per (benchmark, path, variant, metric)
    both measured natively, one ``overhead`` row per mode both measured beside native there.
    Benchmarks without a margin are left out. The verdicts are adjusted together
    (``multiplicity``: ``holm``, ``bh`` or ``none``)."""
    if len(environments) < 2:
        raise ValueError(f"comparing environments needs two or more, got {environments}")
    reference, others = environments[0], environments[1:]
    rows = []
    for key, part in values.groupby(KEYS, sort=False):
        margin = margin_of(key[0], margins)
        if margin is None:
            continue
        hib = bool(part["higher_is_better"].iloc[0])
        by_env = {e: p for e, p in part.groupby("environment")}
        if reference not in by_env:
            continue
        ref_part = by_env[reference]
        for environment in others:
            if environment not in by_env:
                continue
            env_part = by_env[environment]
            ref_native, env_native = (_log_values(p, BASELINE) for p in (ref_part, env_part))
            if ref_native.size and env_native.size:
                rows.append(_row(key, BASELINE, "native", reference, environment, ref_native,
                                 env_native, margin, hib, confidence))  # fmt: skip
            modes = sorted(set(ref_part["mode"]) & set(env_part["mode"]) - {BASELINE})
            for mode in modes:
                ref_d, env_d = _log_ratios(ref_part, mode), _log_ratios(env_part, mode)
                if ref_d.size and env_d.size:
                    rows.append(_row(key, mode, "overhead", reference, environment, ref_d,
                                     env_d, margin, hib, confidence))  # fmt: skip
    out = pd.DataFrame(rows, columns=COLUMNS)
    if out.empty:
        return out.assign(tost_p_adj=[], diff_p_adj=[], multiplicity=[], confidence=[])
    out = stats.adjust_verdicts(out, multiplicity, round(1.0 - confidence, 12),
                                "higher_is_better",
                                mde=[stats.MdeColumns("resolvable", "sd_log", "n_runs",
                                                      df="df")])  # fmt: skip
    return out.assign(confidence=confidence)


def _ci(point: float, lo: float, hi: float) -> str | None:
    return tables.interval_text(point, lo, hi, ".3f")


def verdict_cell(row) -> str | None:
    """The verdict in the table's words (``WORDS``), with the smallest resolvable difference
    when inconclusive."""
    text = tables.verdict_text(row.verdict, row.lo, row.hi, bool(row.higher_is_better),
                               row.resolvable, int(row.n_runs))  # fmt: skip
    if text is None:
        return None
    return WORDS[row.comparison].get(text, text)


def article_table(comparison: pd.DataFrame) -> pd.DataFrame:
    """The table for the article: one row per comparison, the ratio with its interval."""
    rows = []
    for r in comparison.itertuples():
        ref_ratio = None if np.isnan(r.reference_ratio) else f"{r.reference_ratio:.3f}"
        env_ratio = None if np.isnan(r.environment_ratio) else f"{r.environment_ratio:.3f}"
        rows.append({
            "Benchmark": r.benchmark, "Path": r.path, "Variant": r.variant,
            "Statistic": r.metric, "Mode": r.mode,
            "Compared": ("native" if r.comparison == "native" else "ratio to native"),
            "Environments": f"{r.environment} / {r.reference}",
            "Ratio to native in reference": ref_ratio,
            "Ratio to native in environment": env_ratio,
            "Ratio [95% CI]": _ci(r.ratio, r.lo, r.hi),
            "Runs": f"{r.n_environment} / {r.n_reference}",
            "Margin": tables.margin_text(r.margin),
            "Verdict": verdict_cell(r),
        })  # fmt: skip
    return pd.DataFrame(rows)


def caption(comparison: pd.DataFrame) -> str:
    """The table's caption: what is compared, the estimate, the rule, the adjustment."""
    conf = float(comparison["confidence"].iloc[0]) if len(comparison) else 0.95
    eq = stats.equivalence_level(conf)
    alpha = 1.0 - conf
    pairs = zip(comparison["benchmark"], comparison["margin"], strict=True)
    margins = ", ".join(sorted({f"{b} {tables.margin_text(m)}" for b, m in pairs}))
    text = (
        "Environments compared, each against the reference (the first in params.yaml). "
        "Native: the ratio of native's geometric mean per-run value in the environment to the "
        "reference's. Ratio to native: the ratio of a mode's geometric mean per-run ratio to "
        "native in the environment to the same in the reference (below 1 for a rate, above 1 "
        "for a time: the mode costs more there). The two environments are separate campaigns: "
        f"Welch's {conf:.0%} t interval on the log scale. Verdict against the benchmark's "
        f"margin fixed in params.yaml ({margins or 'none'}): equivalent when the {eq:.0%} Welch "
        f"interval lies inside it (TOST at {alpha:.0%}, at least {stats.TOST_MIN_RUNS} runs in "
        f"each environment); otherwise slower / faster (more / less overhead) when Welch's t "
        f"test rejects a ratio of 1 at {alpha:.0%}; otherwise inconclusive, with the smallest "
        "difference the runs could resolve (80% power). Runs: environment / reference."
    )
    if len(comparison) and "multiplicity" in comparison:
        method, _, rest = str(comparison["multiplicity"].iloc[0]).partition(" ")
        name = {"holm": "Holm", "bh": "Benjamini-Hochberg", "none": "no"}.get(method, method)
        text += (f" Multiplicity: {name} adjustment of the table's p-values ({rest}); the "
                 "verdicts follow the adjusted p-values, the intervals are per comparison.")
    return text


def headline(comparison: pd.DataFrame) -> str:
    """One line per comparison: its key, ratio, interval and verdict (the checked output)."""
    lines = []
    for r in comparison.itertuples():
        what = "native" if r.comparison == "native" else f"{r.mode} overhead"
        lines.append(f"{r.benchmark} {r.path} {r.variant} {r.metric} {what}: "
                     f"{r.environment}/{r.reference} {_ci(r.ratio, r.lo, r.hi)}, "
                     f"{verdict_cell(r)}")  # fmt: skip
    return "\n".join(lines)


def figure(comparison: pd.DataFrame) -> alt.FacetChart:
    """Every comparison's ratio with its 95% interval, native and the modes' overheads apart."""
    frame = comparison.assign(
        label=[f"{r.benchmark} {r.path} {r.variant} {r.metric}: {r.mode}"
               for r in comparison.itertuples()],
        panel=["native" if c == "native" else "ratio to native" for c in comparison["comparison"]],
        verdict_text=[verdict_cell(r) for r in comparison.itertuples()],
    )[["label", "panel", "ratio", "lo", "hi", "verdict_text", "environment"]]  # fmt: skip
    base = alt.Chart()
    y = alt.Y("label:N", title=None, sort=None)
    x = alt.X("ratio:Q", title="environment / reference (95% Welch interval)",
              scale=alt.Scale(zero=False))  # fmt: skip
    rule = base.mark_rule().encode(x=alt.X("lo:Q", title=None), x2="hi:Q", y=y)
    point = base.mark_point(filled=True).encode(x=x, y=y,
                                                tooltip=["label", "ratio", "lo", "hi",
                                                         "verdict_text"])  # fmt: skip
    one = base.mark_rule(strokeDash=[4, 4]).encode(x=alt.datum(1.0))
    return alt.layer(rule, point, one, data=frame).facet(
        row=alt.Row("panel:N", title=None)).resolve_scale(y="independent")  # fmt: skip
