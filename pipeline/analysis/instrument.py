"""Proof that the instrument is right: controls with known answers, run through the study's own
collection and analysis (stages ``collect-instrument`` and ``summarise-instrument``).

- **A/A.** Native is measured under a second name (``native-aa``) in the same randomised
  campaign as native, for every benchmark of the check. The analysis modules' own
  ``summarise`` decide each comparison exactly as in the study, so any "overhead" or "faster"
  they report is a false difference; the false-difference rate is their share of verdicts.
- **Injected overheads.** ``native-cpuquota`` (a CFS quota of ``CPU_QUOTA`` CPUs: sysbench
  cpu runs at ``CPU_QUOTA / threads`` of native) and ``native-tbf`` (a token-bucket rate cap of
  ``TBF_RATE_MBIT`` on the dc client's interface: iperf3 receives the rate less the headers the
  bucket counts), and the WAN emulator's delay (the ``wan-calibration`` stages: the round trip
  gains 2 x the one-way delay). Each is reported as injected, expected, recovered with its
  interval, and whether the interval holds the expected value.
- **The smallest injected overhead.** ``docker-cpuquota``: docker-bridge's container with a CFS
  quota of ``CONTAINER_CPU_QUOTA`` (0.94) CPUs, compared with docker-bridge itself, so the
  truth is the quota (1 thread) whatever the container costs. It is the size the study claims
  to resolve: three cpu margins (+-2%) and about the effect the instrument runs find four times
  in five at the lab's spread. Besides the interval it gets the verdict the study's own rule
  gives (``stats.ratio_equivalence``: the paired TOST and t test on the per-run log ratios,
  margin ``common.margins.cpu``, no adjustment, as every comparison of the check), which must
  be "overhead"; a missed 6% is the instrument failing at the size it claims.

The controls are in ``pipeline/collect/modes/controls.py``; a new check is a benchmark in
``pipeline.collect.instrument.CHECKS``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.analysis import calibration, stats, tables
from pipeline.analysis import host as host
from pipeline.analysis import latency as latency
from pipeline.analysis import throughput as throughput
from pipeline.benchmarks.throughput import UDP_LENGTH
from pipeline.data import schema

AA = "native-aa"
# the benchmarks whose check data this analysis decides, with their margin in common.margins
MARGIN_KEY = {"throughput": "network", "latency": "network", "cpu": "cpu", "memory": "memory",
              "disk": "disk"}  # fmt: skip
CHECKS = tuple(MARGIN_KEY)
DIFFERENCES = ("overhead", "faster")
CONTAINER_QUOTA = "docker-cpuquota"
CONTROL_NAMES = {"native-cpuquota": "CPU quota", "native-tbf": "tbf rate cap",
                 "wan-delay": "WAN delay", CONTAINER_QUOTA: "CPU quota on a container"}  # fmt: skip

AA_COLUMNS = [
    "environment", "benchmark", "path", "variant", "statistic", "ratio", "ratio_lo", "ratio_hi",
    "margin", "n_runs", "verdict",
]  # fmt: skip
INJECTED_COLUMNS = [
    "environment", "control", "benchmark", "variant", "injected", "unit", "expected", "recovered",
    "recovered_lo", "recovered_hi", "coverage", "interval_kind", "n_runs", "baseline", "margin",
    "verdict", "recovered_within", "error_pct",
]  # fmt: skip


# ---- the A/A comparisons -----------------------------------------------------------------


def _summaries(raw_dir: Path, margins: dict, confidence: float) -> dict:
    """benchmark -> the study's own summaries of the check data (one frame per summary; the
    throughput frames get the ``variant`` and ``metric`` columns the others have). The check
    measures the error rate of one comparison, so no multiplicity adjustment here."""
    kw = {"confidence": confidence, "multiplicity": "none"}
    out: dict[str, list[pd.DataFrame]] = {}
    for benchmark in CHECKS:
        if not schema.has_dataset(raw_dir, benchmark):
            continue
        margin = margins[MARGIN_KEY[benchmark]]
        if benchmark == "throughput":
            samples, runs = throughput.load(raw_dir)
            tcp = throughput.summarise(samples, runs, margin=margin, **kw)
            udp = throughput.summarise_udp(samples, runs, margin=margin, **kw)
            out[benchmark] = [
                tcp.assign(variant=throughput.TCP_VARIANT, metric="median"),
                udp.assign(variant=throughput.UDP_VARIANT, metric="received"),
            ]
        elif benchmark == "latency":
            cells = latency.load_cells(raw_dir, "latency", latency.LATENCY_METRICS)
            runs = latency.load_runs(raw_dir, "latency")
            out[benchmark] = [latency.summarise(cells, runs, margin=margin, **kw)]
        else:
            samples, runs = host.load(raw_dir, benchmark)
            out[benchmark] = [host.summarise(samples, runs, benchmark, margin=margin, **kw)]
    return out


def aa_rows(benchmark: str, summaries: list[pd.DataFrame]) -> list[dict]:
    """The A/A twin's comparisons with native in the study's summaries of one benchmark."""
    rows = []
    for frame in summaries:
        twin = frame[frame["mode"] == AA]
        for r in twin.to_dict("records"):
            if "verdict_p50" in r:  # latency: one comparison per overhead quantile
                for q in latency.OVERHEAD_QUANTILES:
                    lab = latency.q_label(q)
                    rows.append(_aa_row(benchmark, r["variant"], lab, r, f"ratio_{lab}",
                                        f"verdict_{lab}"))  # fmt: skip
                continue
            rows.append(_aa_row(benchmark, r["variant"], r["metric"], r, "ratio", "verdict"))
    return rows


def _aa_row(benchmark, variant, statistic, r: dict, ratio: str, verdict: str) -> dict:
    return {
        "environment": r.get("environment"), "benchmark": benchmark, "path": r.get("path"),
        "variant": variant, "statistic": statistic,
        "ratio": r.get(ratio), "ratio_lo": r.get(f"{ratio}_lo"), "ratio_hi": r.get(f"{ratio}_hi"),
        "margin": r.get("margin"), "n_runs": r.get("n_runs"), "verdict": r.get(verdict),
    }  # fmt: skip


def false_difference_rate(aa: pd.DataFrame) -> dict:
    """Counts of the A/A verdicts and the share of decided comparisons called a difference."""
    said = aa["verdict"].dropna()
    counts = {v: int((said == v).sum()) for v in ("equivalent", "inconclusive", *DIFFERENCES)}
    n = int(said.size)
    false = counts["overhead"] + counts["faster"]
    return {"comparisons": n, **counts, "false_differences": false,
            "false_difference_rate": false / n if n else float("nan")}  # fmt: skip


# ---- the injected overheads --------------------------------------------------------------


def _threads(command: str) -> int | None:
    found = re.search(r"--threads=(\d+)", command or "")
    return int(found.group(1)) if found else None


def quota_rows(summary: pd.DataFrame, runs: pd.DataFrame) -> list[dict]:
    """cpu under the quota: expected ratio to native ``min(1, CPU_QUOTA / threads)`` (sysbench
    variants; the compile's parallelism varies over the build, so it has no known answer)."""
    rows = []
    quotas = _notes(runs, "native-cpuquota", "cpu_quota")  # what the control recorded
    if len(quotas) != 1:
        return rows
    cpu_quota = float(quotas.pop())
    quota = (summary["mode"] == "native-cpuquota") & (summary["metric"] == "cpu_events_per_s")
    mine = summary[quota]
    for r in mine.itertuples():
        commands = runs.loc[(runs["mode"] == "native-cpuquota") & (runs["variant"] == r.variant)]
        threads = {_threads(c) for c in commands["command"].dropna()} - {None}
        if len(threads) != 1:
            continue
        (t,) = threads
        rows.append({
            "environment": r.environment, "control": "native-cpuquota", "benchmark": "cpu",
            "variant": r.variant,
            "injected": f"CFS quota {cpu_quota:g} CPU, {t} thread(s)", "unit": "ratio to native",
            "expected": min(1.0, cpu_quota / t), "recovered": r.ratio, "recovered_lo": r.ratio_lo,
            "recovered_hi": r.ratio_hi, "coverage": r.confidence,
            "interval_kind": "paired t over runs", "n_runs": r.ratio_n_runs,
            "baseline": r.baseline, "margin": r.margin, "verdict": r.verdict,
        })  # fmt: skip
    return rows


def container_quota_rows(
    samples: pd.DataFrame, runs: pd.DataFrame, margin: float, confidence: float = 0.95
) -> list[dict]:
    """cpu in docker-cpuquota against the mode its run notes name as baseline (docker-bridge):
    expected ratio ``min(1, quota / threads)`` for the sysbench variants; the ratio, its paired t
    interval and the verdict of ``stats.ratio_equivalence`` at ``margin``, the study's rule for
    one comparison (per-run values as ``host.per_run`` makes them for the cpu table)."""
    quotas = _notes(runs, CONTAINER_QUOTA, "cpu_quota")
    baselines = _notes(runs, CONTAINER_QUOTA, "baseline")
    if len(quotas) != 1 or len(baselines) != 1:
        return []
    cpu_quota, baseline = float(quotas.pop()), baselines.pop()
    values = host.per_run(samples, runs)
    values = values[values["metric"] == "cpu_events_per_s"]
    rows = []
    for (env, variant), cell in values.groupby(["environment", "variant"], sort=True):
        mine = runs[(runs["mode"] == CONTAINER_QUOTA) & (runs["variant"] == variant)
                    & (runs["environment"] == env)]  # fmt: skip
        threads = {_threads(c) for c in mine["command"].dropna()} - {None}
        if len(threads) != 1 or CONTAINER_QUOTA not in set(cell["mode"]):
            continue
        (t,) = threads
        pair = cell[cell["mode"].isin([CONTAINER_QUOTA, baseline])][["run", "mode", "value"]]
        eq = stats.ratio_equivalence(pair, CONTAINER_QUOTA, baseline, margin, confidence, True)
        if not eq.n_runs:
            continue
        rows.append({
            "environment": env, "control": CONTAINER_QUOTA, "benchmark": "cpu",
            "variant": variant,
            "injected": f"CFS quota {cpu_quota:g} CPU on {baseline}'s container, {t} thread(s)",
            "unit": f"ratio to {baseline}", "expected": min(1.0, cpu_quota / t),
            "recovered": eq.ratio, "recovered_lo": eq.lo, "recovered_hi": eq.hi,
            "coverage": confidence, "interval_kind": "paired t over runs", "n_runs": eq.n_runs,
            "baseline": baseline, "margin": margin, "verdict": eq.verdict,
        })  # fmt: skip
    return rows


def tbf_goodput_mbit(rate_mbit: float, mtu: int, variant: str) -> float:
    """What iperf3 receives through a tbf of ``rate_mbit``: tbf counts whole Ethernet frames
    (L3 packet + 14 bytes), iperf3 only the payload. TCP: MSS = MTU - 40 (IP, TCP) - 12 (the
    timestamp option Linux sends). UDP: the study's 1400-byte datagrams + 8 UDP + 20 IP."""
    if variant == "tcp":
        payload, frame = mtu - 52, mtu + 14
    elif variant == "udp":
        payload, frame = UDP_LENGTH, UDP_LENGTH + 8 + 20 + 14
    else:
        raise ValueError(f"no tbf goodput model for variant {variant!r}")
    return rate_mbit * payload / frame


def _notes(runs: pd.DataFrame, mode: str, key: str) -> set[str]:
    found = set()
    for text in runs.loc[runs["mode"] == mode, "notes"].dropna():
        value = json.loads(text).get(key)
        if value is not None:
            found.add(str(value))
    return found


def tbf_rows(tcp: pd.DataFrame, udp: pd.DataFrame, runs: pd.DataFrame) -> list[dict]:
    """iperf3 through the rate cap: received Mbit/s (median over runs, with its interval)."""
    mtus = _notes(runs, "native-tbf", "mtu")
    rates = _notes(runs, "native-tbf", "tbf_rate_mbit")  # what the control recorded
    if len(mtus) != 1 or len(rates) != 1:
        return []
    mtu, rate = int(mtus.pop()), float(rates.pop())
    rows = []
    for variant, frame, col in (("tcp", tcp, "median"), ("udp", udp, "received")):
        r = frame[(frame["mode"] == "native-tbf") & (frame["path"] == "dc")]
        if r.empty:
            continue
        r = r.iloc[0]
        base = "median_gbps" if col == "median" else "received_gbps"
        lo, hi = ("median_lo_gbps", "median_hi_gbps") if col == "median" else (
            "received_gbps_lo", "received_gbps_hi")  # fmt: skip
        cov = "median_coverage" if col == "median" else "received_gbps_coverage"
        rows.append({
            "environment": r["environment"], "control": "native-tbf", "benchmark": "throughput",
            "variant": variant,
            "injected": f"tbf rate {rate:g} Mbit/s (MTU {mtu})", "unit": "Mbit/s received",
            "expected": tbf_goodput_mbit(rate, mtu, variant),
            "recovered": r[base] * 1e3, "recovered_lo": r[lo] * 1e3, "recovered_hi": r[hi] * 1e3,
            "coverage": r[cov], "interval_kind": "distribution-free, across runs",
            "n_runs": r["n_runs"],
        })  # fmt: skip
    return rows


def wan_rows(wan_raw: Path, delays_ms: list[float], confidence: float):
    """The emulator's delay: the round trip the configured delay adds (the Internet path at the
    delay minus the same path at delay 0, so the emulator's own hop cancels) vs 2 x delay. Without
    a delay-0 calibration, the Internet minus dc round trip, which includes that hop. The
    calibration runs on the embedded lab only (the environment named "lab" in params.yaml)."""
    if calibration.skipped_reason(wan_raw) or not wan_raw.exists():
        return []
    cal = calibration.delay_added(wan_raw, delays_ms, confidence)
    baseline, kind = "Internet path at delay 0", "Welch t over runs, delays apart"
    if cal.empty:
        cal = calibration.summarise(wan_raw, delays_ms, confidence)
        cal = cal[cal["delay_ms"] > 0]  # a zero delay injects nothing
        baseline, kind = "dc path, emulator hop included", "paired t over runs"
    return [
        {
            "environment": "lab", "control": "wan-delay", "benchmark": "latency",
            "variant": f"{r.variant} p{r.q * 100:g}",
            "injected": f"one-way delay {r.delay_ms:g} ms each way (vs {baseline})",
            "unit": "us added round trip",
            "expected": r.expected_added_us, "recovered": r.added_us, "recovered_lo": r.added_lo_us,
            "recovered_hi": r.added_hi_us, "coverage": confidence,
            "interval_kind": kind, "n_runs": r.n_runs,
        }  # fmt: skip
        for r in cal.itertuples()
    ]


def roots(raw_dir: str | Path) -> list[Path]:
    """The check's raw roots, one per environment: ``<raw_dir>/<environment>/``, each holding
    ``<benchmark>/<environment>/`` as a campaign writes it (collect-instrument's outs)."""
    base = Path(raw_dir)
    if not base.is_dir():
        return []
    found = [p for p in base.iterdir() if p.is_dir()]
    return sorted(p for p in found if any(schema.has_dataset(p, b) for b in CHECKS))


def summarise(
    raw_dir: str | Path,
    margins: dict,
    wan_raw: str | Path | None = None,
    wan_delays_ms: list[float] | None = None,
    confidence: float = 0.95,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(A/A comparisons, injected vs recovered) from the check's raw data under ``raw_dir``
    (see ``roots``) and the WAN calibration's, when given."""
    aa_found: list[dict] = []
    injected: list[dict] = []
    for raw in roots(raw_dir):
        found = _summaries(raw, margins, confidence)
        aa_found += [row for b, frames in found.items() for row in aa_rows(b, frames)]
        if "cpu" in found:
            samples, runs = host.load(raw, "cpu")
            injected += quota_rows(found["cpu"][0], runs)
            injected += container_quota_rows(samples, runs, margins["cpu"], confidence)
        if "throughput" in found:
            runs = schema.read_dataset(raw, "throughput", "runs")
            injected += tbf_rows(*found["throughput"], runs)
    aa = pd.DataFrame(aa_found, columns=AA_COLUMNS)
    if wan_raw is not None:
        injected += wan_rows(Path(wan_raw), wan_delays_ms or [], confidence)
    out = pd.DataFrame(injected, columns=INJECTED_COLUMNS)
    # an exact injection recovered exactly has a zero-width interval: equal up to rounding
    lo, hi, truth = out["recovered_lo"], out["recovered_hi"], out["expected"]
    within = ((lo <= truth) | np.isclose(lo, truth, rtol=1e-9)) & (
        (truth <= hi) | np.isclose(truth, hi, rtol=1e-9)
    )
    out["recovered_within"] = within.where(out["recovered_lo"].notna())
    out["error_pct"] = 100 * (out["recovered"] / out["expected"] - 1)
    return aa, out


# ---- the figure --------------------------------------------------------------------------


def figure(aa: pd.DataFrame, injected: pd.DataFrame):
    """Two panels on one scale, "measured / truth": the A/A ratios (truth 1) with their
    intervals and each comparison's equivalence margin, and each injected overhead's recovered
    value over its expected value (truth 1). Returns the chart and its caption."""
    import altair as alt

    from pipeline.analysis import figures

    a = aa.dropna(subset=["ratio"]).copy()
    a["label"] = [f"{r.benchmark} {r.variant} {r.statistic} ({r.path})" for r in a.itertuples()]
    a["lo"], a["hi"] = a["ratio_lo"], a["ratio_hi"]
    a["m_lo"], a["m_hi"] = 1 - a["margin"], 1 + a["margin"]
    b = injected.dropna(subset=["recovered"]).copy()
    b["label"] = [f"{r.control} {r.variant}" for r in b.itertuples()]
    b["ratio"], b["lo"], b["hi"] = (b[c] / b["expected"] for c in
                                    ("recovered", "recovered_lo", "recovered_hi"))  # fmt: skip
    x = alt.X("ratio:Q", title="measured / truth", scale=alt.Scale(zero=False))
    color = alt.value(figures.MODE_COLORS["native"])

    def panel(frame: pd.DataFrame, title: str, margins: bool) -> alt.LayerChart:
        y = alt.Y("label:N", sort=list(frame["label"]), title=None)
        layers = [alt.Chart(pd.DataFrame({"one": [1.0]})).mark_rule(strokeDash=[4, 3])
                  .encode(x="one:Q")]  # fmt: skip
        if margins:
            layers.append(alt.Chart(frame).mark_tick(color="#b30000", thickness=2)
                          .encode(x="m_lo:Q", y=y))  # fmt: skip
            layers.append(alt.Chart(frame).mark_tick(color="#b30000", thickness=2)
                          .encode(x="m_hi:Q", y=y))  # fmt: skip
        layers += [
            alt.Chart(frame).mark_rule(strokeWidth=2).encode(x="lo:Q", x2="hi:Q", y=y, color=color),
            alt.Chart(frame).mark_point(filled=True, size=60).encode(x=x, y=y, color=color),
        ]
        return alt.layer(*layers).properties(title=title, width=300)

    chart = alt.hconcat(
        panel(a, "A/A: native-aa / native", True),
        panel(b, "Injected overheads: recovered / expected", False),
    )
    conf = 0.95 if a.empty or "confidence" not in a else float(a["confidence"].iloc[0])
    caption = (
        "The instrument check. Left: each A/A comparison's ratio (point) with its "
        f"{conf:.0%} paired t interval (bar) and the equivalence margin fixed before "
        "the data (red ticks); the truth is 1. Right: each injected overhead's recovered value "
        "divided by the value the injection implies, with the recovered interval divided the "
        "same way (CPU quota: paired t; tbf cap: distribution-free across runs; WAN "
        "delay: t over runs, the table names which); the truth is 1."
    )
    return chart, caption


# ---- tables and sentences ----------------------------------------------------------------


def aa_table(aa: pd.DataFrame) -> pd.DataFrame:
    """The A/A comparisons as the article shows them."""
    return pd.DataFrame(
        {
            "Environment": aa["environment"],
            "Benchmark": aa["benchmark"],
            "Path": aa["path"],
            "Variant": aa["variant"],
            "Statistic": aa["statistic"],
            "A/A ratio [95% CI]": [
                tables.interval_text(r.ratio, r.ratio_lo, r.ratio_hi, ".3f")
                for r in aa.itertuples()
            ],
            "Margin": [f"±{m * 100:g}%" if pd.notna(m) else "" for m in aa["margin"]],
            "Runs": aa["n_runs"],
            "Verdict": aa["verdict"].fillna("n/a"),
        }
    )


def injected_table(injected: pd.DataFrame) -> pd.DataFrame:
    """Injected vs recovered as the article shows them."""

    def yes_no(v) -> str:
        return "n/a" if pd.isna(v) else ("yes" if v else "no")

    return pd.DataFrame(
        {
            "Environment": injected["environment"],
            "Control": injected["control"],
            "Variant": injected["variant"],
            "Injected": injected["injected"],
            "Unit": injected["unit"],
            "Expected": [_num(v) for v in injected["expected"]],
            "Recovered [interval]": [
                tables.interval_text(
                    r.recovered, r.recovered_lo, r.recovered_hi, f".{_digits(r.expected)}f"
                )
                for r in injected.itertuples()
            ],
            "Recovered vs expected %": [f"{e:+.2f}" for e in injected["error_pct"]],
            "Interval covers": [
                f"{c * 100:.1f}%" if pd.notna(c) else "" for c in injected["coverage"]
            ],
            "Expected inside": [yes_no(v) for v in injected["recovered_within"]],
            "Compared with": [_text(v) for v in injected["baseline"]],
            "Verdict (margin)": [
                f"{v} (±{m * 100:g}%)" if isinstance(v, str) and pd.notna(m) else "n/a"
                for v, m in zip(injected["verdict"], injected["margin"], strict=True)
            ],
        }
    )


def _text(value) -> str:
    return value if isinstance(value, str) else "n/a"


def _digits(value: float) -> int:
    return 3 if abs(value) < 10 else 1


def _num(value: float) -> str:
    return f"{value:.{_digits(value)}f}"


def sentence(aa: pd.DataFrame, injected: pd.DataFrame) -> str:
    """The methods section's paragraph, every number from the two tables."""
    rate = false_difference_rate(aa)
    parts = []
    if rate["comparisons"]:
        parts.append(
            f"A/A check: native measured under a second name in the same randomised campaigns "
            f"gave {rate['comparisons']} comparisons: {rate['equivalent']} equivalent, "
            f"{rate['inconclusive']} inconclusive and {rate['false_differences']} called a "
            f"difference (false-difference rate {rate['false_difference_rate'] * 100:.1f}%)."
        )
    else:
        parts.append("A/A check: no comparison was measured.")
    decided = injected[injected["recovered_within"].notna()]
    if len(decided):
        inside = int(decided["recovered_within"].astype(bool).sum())
        names = ", ".join(CONTROL_NAMES[c] for c in dict.fromkeys(decided["control"]))
        parts.append(
            f"Injected overheads ({names}): the expected value lay inside the recovered "
            f"interval in {inside} of {len(decided)} cases."
        )
    small = injected[(injected["control"] == CONTAINER_QUOTA) & injected["verdict"].notna()]
    if len(small):  # the smallest cut (1 thread) is the one the sentence is for
        r = next(small.sort_values("expected", ascending=False).itertuples())
        parts.append(
            f"The smallest, a {100 * (1 - r.expected):.0f}% CPU cut on a container "
            f"({r.variant}, against {r.baseline}), was called \"{r.verdict}\" by the study's "
            f"rule at ±{r.margin * 100:g}% with {r.n_runs} runs."
        )
    return " ".join(parts)


def write(aa: pd.DataFrame, injected: pd.DataFrame, processed: Path, tabs: Path) -> list[Path]:
    """Processed CSVs, the two article tables, the sentence and the rate as JSON."""
    frames = {"instrument_aa_summary": aa, "instrument_injected_summary": injected}
    paths = tables.write_processed(frames, processed)
    paths += tables.write(aa_table(aa), tabs, "instrument_aa",
                          "A/A check: native under a second name against native, decided by "
                          "the study's own summaries (ratio with its 95% paired t "
                          "interval; verdict against the pre-registered margin).")  # fmt: skip
    paths += tables.write(injected_table(injected), tabs, "instrument_injected",
                          "Injected overheads: what a control injects, the value the injection "
                          "implies, and what the study recovered with its interval.")  # fmt: skip
    text = sentence(aa, injected)
    (tabs / "instrument_sentence.md").write_text(text + "\n", encoding="utf-8")
    rate = {k: (None if isinstance(v, float) and np.isnan(v) else v)
            for k, v in false_difference_rate(aa).items()}  # fmt: skip
    (processed / "instrument_rate.json").write_text(json.dumps(rate, indent=1) + "\n")
    return [*paths, tabs / "instrument_sentence.md", processed / "instrument_rate.json"]
