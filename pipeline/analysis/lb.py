"""Load-balancing analysis: the 003 article's "req/s as replicas grow" tables, per balancer and
replica count, with intervals, against one replica dialled directly (variant ``direct-r1``).

Each mode is its own block with its own baseline: ``swarm-overlay`` (Docker Swarm: the article's
setting; its direct replica is one container on the default bridge) and ``k8s-pod``
(Kubernetes: the replicas a Deployment, ``vip`` a NodePort Service through kube-proxy; its
direct replica is one pod dialled at its IP). A balancer is only ever compared with the direct
replica of its own mode; tables and figures name the orchestrator whenever Kubernetes rows are
present.

pipeline/benchmarks/lb.py records one measured wrk window per (run, variant): its rate of 2xx
responses (``lb_requests_per_s``), its errors (``lb_errors``) and wrk's latency percentiles
(``lb_latency_us``, sample = percentile x 10: 500, 900, 990, 999). The window's value is the
run's value: runs are the unit of inference.

- **req/s**: the median over runs with the distribution-free rank interval
  (``stats.quantile_ci``; with too few runs the range of the runs, its coverage stated);
- **% of direct**: the geometric mean of the per-run ratios to ``direct-r1`` over the runs
  both measured, with its paired t interval (``stats.ratio_ci``: a run's shared conditions
  cancel); **overhead vs direct** = 100 (1 - ratio), the share of the direct
  rate lost. The ratio of means over runs is given with a delta-method t interval
  (``stats.ratio_of_means_ci``; the article's ``ab`` prints a mean rate, which is the rate of
  one run);
- **latency**: per percentile, the median over runs of wrk's per-run value with its rank
  interval. wrk is a saturated closed loop: these latencies compare balancers at their own
  maximum rate (queueing included), not service times at a fixed load;
- **errors**: the total over the measured runs and the runs that had any.

Warm-up windows and runs whose status is not ok are never analysed; variants that were skipped
(the Swarm VIP without IPVS) or failed stay in every output with their reason.
"""

from __future__ import annotations

from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd

from pipeline import catalogue
from pipeline.analysis import figures, stats, tables
from pipeline.analysis.tables import as_text, cell_status, status_text
from pipeline.benchmarks.lb import BALANCERS, parse_variant
from pipeline.capabilities import serving
from pipeline.data import schema

BASELINE = "direct-r1"
# The study mode each mode's baseline stands for. Swarm's: one container on the default bridge,
# dialled at its bridge address (pipeline/benchmarks/lb.py), as the docker-bridge mode does.
# Kubernetes': one pod dialled at its pod IP, as the k8s-pod mode does.
BASELINE_MODE = "docker-bridge"
ORCHESTRATORS = {m: catalogue.platform(m) for m in serving("lb")}
SWARM_MODE = catalogue.on_platform(ORCHESTRATORS, "Docker Swarm")
KUBERNETES_MODE = catalogue.on_platform(ORCHESTRATORS, "Kubernetes")
BASELINE_MODES = {SWARM_MODE: BASELINE_MODE, KUBERNETES_MODE: KUBERNETES_MODE}
RATE, ERRORS, LATENCY = "lb_requests_per_s", "lb_errors", "lb_latency_us"
PERCENTILES = {500: "p50", 900: "p90", 990: "p99", 999: "p99.9"}
KEYS = ["environment", "mode", "path", "variant"]
BALANCER_LABELS = {
    "direct": "Direct (one replica, no balancer)",
    "haproxy": "HAProxy",
    "nginx": "nginx",
    "dnsrr": "Swarm DNS round robin (dnsrr)",
    "vip": "Swarm VIP / routing mesh",
}
# What a balancer is called where a mode's orchestrator provides it differently.
MODE_BALANCER_LABELS = {
    KUBERNETES_MODE: {
        "dnsrr": "Kubernetes headless Service (cluster DNS round robin)",
        "vip": "Kubernetes Service (NodePort, kube-proxy iptables)",
    },
}
BALANCER_COLORS = {
    "direct": "#222222",
    "haproxy": "#e6550d",
    "nginx": "#31a354",
    "dnsrr": "#756bb1",
    "vip": "#54278f",
}


def balancer_label(mode: str, balancer: str) -> str:
    """How tables and figures name ``balancer`` in ``mode``."""
    return MODE_BALANCER_LABELS.get(mode, {}).get(balancer, BALANCER_LABELS.get(balancer, balancer))


def orchestrator(mode: str) -> str:
    return ORCHESTRATORS.get(mode, mode)


def _mode_order(mode: str) -> tuple[int, str]:
    order = list(ORCHESTRATORS)
    return (order.index(mode) if mode in order else len(order), mode)


def shows_modes(summary: pd.DataFrame) -> bool:
    """Whether outputs name the orchestrator: some row is not Swarm's (the article's setting)."""
    return bool(len(summary)) and set(summary["mode"]) != {SWARM_MODE}


def load(raw_dir: Path | str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(samples, runs)`` of the lb benchmark across every environment in ``raw_dir``."""
    return schema.read_dataset(raw_dir, "lb", "samples"), schema.read_dataset(raw_dir, "lb", "runs")


def _ok_measured(samples: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    ok = runs.loc[runs["status"] == "ok", [*KEYS, "run"]].drop_duplicates()
    measured = samples[~samples["warmup"].astype(bool)]
    return measured.merge(ok, on=[*KEYS, "run"], how="inner")


def per_run(samples: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (environment, mode, path, variant, run) of an ok run: ``rps``, ``errors`` and
    ``p50_us`` .. ``p99.9_us`` (wrk's percentiles), with ``balancer`` and ``replicas``."""
    data = _ok_measured(samples, runs)
    keys = [*KEYS, "run"]
    cols = [
        *keys,
        "balancer",
        "replicas",
        "rps",
        "errors",
        *[f"{p}_us" for p in PERCENTILES.values()],
    ]
    if data.empty:
        return pd.DataFrame(columns=cols)
    out = data[data["metric"] == RATE].groupby(keys, as_index=False)["value"].sum()
    out = out.rename(columns={"value": "rps"})
    errors = data[data["metric"] == ERRORS].groupby(keys, as_index=False)["value"].sum()
    out = out.merge(errors.rename(columns={"value": "errors"}), on=keys, how="left")
    lat = data[data["metric"] == LATENCY]
    for sample, label in PERCENTILES.items():
        one = lat[lat["sample"] == sample].groupby(keys, as_index=False)["value"].median()
        out = out.merge(one.rename(columns={"value": f"{label}_us"}), on=keys, how="left")
    parsed = [parse_variant(v) for v in out["variant"]]
    out["balancer"] = [b for b, _ in parsed]
    out["replicas"] = [n for _, n in parsed]
    return out[cols].sort_values(keys, ignore_index=True)


def _variant_key(variant: str) -> tuple[int, int, str]:
    try:
        balancer, replicas = parse_variant(variant)
    except ValueError:
        return len(BALANCERS), 0, variant
    return BALANCERS.index(balancer), replicas, variant


def summarise(
    samples: pd.DataFrame,
    runs: pd.DataFrame,
    confidence: float = 0.95,
    multiplicity: str = "holm",
) -> pd.DataFrame:
    """One row per (environment, mode, path, variant) planned or measured; see the module
    docstring for the columns' meaning. ``ratio*`` and ``ratio_mean*`` compare with ``direct-r1``
    in the same environment, mode and path; NaN when either side has no ok run."""
    values = per_run(samples, runs)
    cells = pd.concat([runs[KEYS], values[KEYS]]).drop_duplicates()
    rows = []
    for env, mode, path, variant in cells.itertuples(index=False):
        where = (values["environment"] == env) & (values["mode"] == mode) & (values["path"] == path)
        mine = values[where & (values["variant"] == variant)]
        base = values[where & (values["variant"] == BASELINE)]
        run_rows = tables.rows_of(runs, environment=env, mode=mode, path=path, variant=variant)
        rows.append(_row(env, mode, path, variant, mine, base, run_rows, confidence))
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    out["overhead_pct"] = 100.0 * (1.0 - out["ratio"])
    out["overhead_lo_pct"] = 100.0 * (1.0 - out["ratio_hi"])
    out["overhead_hi_pct"] = 100.0 * (1.0 - out["ratio_lo"])
    out = stats.adjust_verdicts(out, multiplicity, round(1.0 - confidence, 12), True,
                                mde=stats.ONE_MDE)  # fmt: skip
    order = out["variant"].map(_variant_key)
    out = out.assign(_m=out["mode"].map(_mode_order), _k=order)
    out = out.sort_values(["environment", "_m", "path", "_k"])
    return out.drop(columns=["_m", "_k"]).reset_index(drop=True)


def _row(env, mode, path, variant, mine, base, run_rows, confidence) -> dict:
    try:
        balancer, replicas = parse_variant(variant)
    except ValueError:
        balancer, replicas = variant, 0
    rate = stats.quantile_ci(mine["rps"].to_numpy(dtype=float), 0.5, confidence)
    status, reason = cell_status(run_rows, rate.n, RATE)
    row = {
        "environment": env, "mode": mode, "path": path, "variant": variant,
        "balancer": balancer, "replicas": replicas,
        "configuration": balancer_label(mode, balancer), "orchestrator": orchestrator(mode),
        "status": status, "reason": reason or None, "n_runs": rate.n,
        "n_runs_planned": int(max(run_rows["run"].nunique(), rate.n)),
        "rps": rate.point, "rps_lo": rate.lo, "rps_hi": rate.hi,
        "rps_coverage": rate.coverage, "rps_ci_reached": rate.reached,
        "rps_mean": float(mine["rps"].mean()) if rate.n else float("nan"),
        "baseline": BASELINE, "baseline_mode": BASELINE_MODES.get(mode, BASELINE_MODE),
    }  # fmt: skip
    for label in PERCENTILES.values():
        ci = stats.quantile_ci(mine[f"{label}_us"].to_numpy(dtype=float), 0.5, confidence)
        row |= {f"{label}_us": ci.point, f"{label}_lo_us": ci.lo, f"{label}_hi_us": ci.hi}
    row["errors_total"] = float(mine["errors"].sum()) if rate.n else float("nan")
    row["runs_with_errors"] = int((mine["errors"] > 0).sum())
    pair = pd.concat([mine.assign(mode="cell"), base.assign(mode="base")])
    pair = pair[["run", "mode", "rps"]].rename(columns={"rps": "value"})
    r = stats.ratio_ci(pair, "cell", "base", confidence)
    lo, hi = (r.lo, r.hi) if r.n_runs >= 2 else (float("nan"), float("nan"))
    paired = pair.pivot_table(index="run", columns="mode", values="value")
    paired = paired.reindex(columns=["cell", "base"]).dropna().to_numpy(dtype=float)
    mean, mean_lo, mean_hi = stats.ratio_of_means_ci(paired[:, 0], paired[:, 1], confidence)
    verdict, alpha = None, round(1.0 - confidence, 12)
    tests = stats.tost_log_ratio(paired[:, 0], paired[:, 1], 0.5, alpha)
    if variant != BASELINE and r.n_runs:
        # no equivalence margin was fixed for a balancer: overhead, faster or inconclusive
        verdict = stats.difference_verdict(paired[:, 0], paired[:, 1], True, alpha)
    row |= {
        "verdict": verdict, "tost_p": float("nan"), "diff_p": tests.diff_p,
        "resolvable": r.resolvable, "sd_log": r.sd_log,
        "ratio": r.ratio, "ratio_lo": lo, "ratio_hi": hi, "ratio_n_runs": r.n_runs,
        "ratio_mean": mean, "ratio_mean_lo": mean_lo, "ratio_mean_hi": mean_hi,
        "confidence": confidence,
    }  # fmt: skip
    if rate.n and not r.n_runs and variant != BASELINE:
        extra = f"no {BASELINE} run to compare with"
        row["reason"] = f"{row['reason']}; {extra}" if row["reason"] else extra
    return row


# --- text: table, caption, headline, findings ----------------------------------------------------


def _ci(point: float, lo: float, hi: float, fmt: str) -> str | None:
    return tables.interval_text(point, lo, hi, fmt)


def _note(r) -> str:
    if r.status != "ok":
        return status_text(r.status, r.reason)
    parts = [as_text(r.reason)] if as_text(r.reason) else []
    if r.variant == BASELINE:
        parts.insert(0, "baseline")
    if r.n_runs and not r.rps_ci_reached:
        parts.append(
            f"req/s interval is the range of {r.n_runs} run(s) (coverage {r.rps_coverage:.1%})"
        )
    if r.runs_with_errors:
        parts.append(f"errors in {r.runs_with_errors} of {r.n_runs} runs")
    return "; ".join(parts)


def article_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Balancer | Replicas | req/s [CI] | % of direct [CI] | Overhead vs direct % [CI] |
    p50 / p99 latency us [CI] | Errors | Runs | Note: the 003 article's "Containers | Req/sec"
    tables, one block per balancer, with intervals; not measured rows show n/a and the reason.
    An Orchestrator column leads (after Environment) when Kubernetes rows are present."""
    conf = float(summary["confidence"].iloc[0]) if len(summary) else 0.95
    ci = f"[{conf:.0%} CI]"
    base = [r.variant == BASELINE and r.n_runs > 0 for r in summary.itertuples()]
    table = pd.DataFrame(
        {
            "Balancer": summary["configuration"],
            "Replicas": summary["replicas"].astype(str),
            f"req/s {ci}": [_ci(r.rps, r.rps_lo, r.rps_hi, ",.0f") for r in summary.itertuples()],
            f"% of direct {ci}": [
                "100 (baseline)"
                if b
                else _ci(100 * r.ratio, 100 * r.ratio_lo, 100 * r.ratio_hi, ".1f")
                for b, r in zip(base, summary.itertuples(), strict=True)
            ],
            f"Overhead vs direct % {ci}": [
                "" if b else _ci(r.overhead_pct, r.overhead_lo_pct, r.overhead_hi_pct, "+.1f")
                for b, r in zip(base, summary.itertuples(), strict=True)
            ],
            "Verdict": [
                "" if b or not r.verdict else r.verdict
                for b, r in zip(base, summary.itertuples(), strict=True)
            ],  # fmt: skip
            f"p50 latency us {ci}": [
                _ci(r.p50_us, r.p50_lo_us, r.p50_hi_us, ",.0f") for r in summary.itertuples()
            ],
            f"p99 latency us {ci}": [
                _ci(r.p99_us, r.p99_lo_us, r.p99_hi_us, ",.0f") for r in summary.itertuples()
            ],
            "Errors": [
                None if np.isnan(r.errors_total) else f"{r.errors_total:.0f}"
                for r in summary.itertuples()
            ],
            "Runs": [tables.runs_text(r.n_runs, r.n_runs_planned) for r in summary.itertuples()],
            "Note": [_note(r) for r in summary.itertuples()],
        }
    )
    if shows_modes(summary):
        table.insert(0, "Orchestrator", summary["orchestrator"].to_numpy())
    if len(summary) and summary["environment"].nunique() > 1:
        table.insert(0, "Environment", summary["environment"].to_numpy())
    return table


def table_caption(summary: pd.DataFrame) -> str:
    conf = float(summary["confidence"].iloc[0]) if len(summary) else 0.95
    multiple = summary["multiplicity"].iloc[0] if len(summary) else ""
    return (
        "Load balancing: requests per second (2xx responses) and latency of wrk (closed loop, "
        "one connection per thread) through each balancer as the replicas behind it grow, "
        "against one replica dialled directly (direct). Per run: the one measured wrk window "
        f"(warm-up excluded). req/s and latency: median across runs with a {conf:.0%} "
        "distribution-free (order-statistic) interval. % of direct: geometric mean of the "
        f"per-run ratios to direct over the runs both measured, {conf:.0%} paired t interval; "
        "overhead vs direct = 100 (1 - ratio), the share of the direct rate lost. Verdict (no "
        "equivalence margin was fixed for a balancer, so none is called equivalent): overhead "
        "(faster) when a paired t test on the runs' log ratios rejects a ratio of 1 (at least "
        f"3 runs), adjusted across the table ({multiple}), else inconclusive. Latencies are "
        "those of a saturated closed loop (queueing included). Errors: connect/read/write/"
        "timeout errors and non-2xx responses summed over the measured runs. In the lab every "
        "replica shares the same cores: the table shows what a balancer costs per request, not "
        "how a cluster scales. Variants that could not run are listed with n/a and their "
        "reason." + (_modes_caption(summary) if shows_modes(summary) else "")
    )


def _modes_caption(summary: pd.DataFrame) -> str:
    names = ", ".join(orchestrator(m) for m in sorted(set(summary["mode"]), key=_mode_order))
    return (
        f" Orchestrators: {names}, each against its own direct replica (Docker Swarm: one "
        "container on the default bridge; Kubernetes: one pod dialled at its pod IP). On "
        "Kubernetes the replicas are a Deployment, HAProxy and nginx a pod on the first "
        "server's node, and the Service a NodePort Service (kube-proxy, iptables mode: one "
        "replica chosen at random per connection) dialled at the first server's address."
    )


def headline(summary: pd.DataFrame) -> str:
    """Deterministic plain-text digest of the headline numbers (checked by nbval)."""
    lines = []
    modes = shows_modes(summary)
    for r in summary.itertuples():
        head = f"{r.environment} {r.mode + ' ' if modes else ''}{r.variant}: {r.status}"
        if not r.n_runs:
            lines.append(f"{head}, n/a ({r.reason})")
            continue
        cov = "" if r.rps_ci_reached else f" (coverage {r.rps_coverage:.4f})"
        ratio = (
            "no ratio"
            if np.isnan(r.ratio)
            else f"{BASELINE} ratio {r.ratio:.4f} [{r.ratio_lo:.4f}, {r.ratio_hi:.4f}]"
        )
        lines.append(
            f"{head}, {r.n_runs} runs, {r.rps:.1f} req/s [{r.rps_lo:.1f}, {r.rps_hi:.1f}]{cov}, "
            f"{ratio}, p99 {r.p99_us:.1f} us, errors {r.errors_total:.0f}"
        )
    return "\n".join(lines)


def findings(summary: pd.DataFrame) -> str:
    """Markdown sentences per balancer variant: its rate against direct, said as a cost only
    when its verdict is "overhead" (``stats.difference_verdict``: the whole interval of the ratio
    below 1 and a paired t test on the runs agreeing)."""
    out = []
    modes = shows_modes(summary)
    for r in summary.itertuples():
        if r.variant == BASELINE:
            continue
        where = f" ({r.orchestrator})" if modes else ""
        label = f"**{r.configuration}**{where}, {r.replicas} replica(s)"
        if r.status != "ok":
            out.append(f"- {label}: not measured ({status_text(r.status, r.reason)}).")
            continue
        if not r.ratio_n_runs:
            out.append(f"- {label}: no {BASELINE} baseline to compare with.")
            continue
        span = f"{100 * r.ratio:.1f}% of direct"
        if np.isnan(r.ratio_lo):
            out.append(f"- {label}: {span} from {r.ratio_n_runs} run (no interval).")
            continue
        span += f" [{100 * r.ratio_lo:.1f}, {100 * r.ratio_hi:.1f}]"
        side = r.verdict
        if side == "overhead":
            said = f"loses {r.overhead_pct:.1f}% of the direct rate ({span})"
        elif side == "faster":
            said = f"serves more than direct ({span})"
        else:
            said = f"is not distinguishable from direct with {r.ratio_n_runs} runs ({span})"
        out.append(f"- {label} {said}.")
    return "\n".join(out)


# --- figure ----------------------------------------------------------------------------------


def figure(summary: pd.DataFrame, per_run_values: pd.DataFrame) -> tuple[alt.Chart, str]:
    """req/s against replicas, one line per balancer with its intervals and runs, the direct
    replica as a reference line with its interval as a band; one panel per orchestrator when
    Kubernetes rows are present, each with its own direct replica. Returns the chart and its
    caption."""
    conf = float(summary["confidence"].iloc[0])
    # An orchestrator none of whose rows was measured (Kubernetes not built) gets no panel of
    # its own: its rows are in the caption's "Not measured".
    drawn = [m for m in sorted(set(summary["mode"]), key=_mode_order)
             if (summary.loc[summary["mode"] == m, "n_runs"] > 0).any()]  # fmt: skip
    if shows_modes(summary) and drawn:
        panels = [
            _panel(summary[summary["mode"] == mode], per_run_values[per_run_values["mode"] == mode],
                   f"{orchestrator(mode)}: requests per second as replicas grow")
            for mode in drawn
        ]  # fmt: skip
        chart = (alt.hconcat(*panels).resolve_scale(color="independent", y="shared")
                 if len(panels) > 1 else panels[0])  # fmt: skip
    else:
        chart = _panel(summary, per_run_values,
                       "Load balancing: requests per second as replicas grow")  # fmt: skip
    # each reason once, with the configurations and replica counts it holds for
    missing: dict[str, dict[str, set[int]]] = {}
    for r in summary.itertuples():
        if r.status != "ok":
            what = f"{r.configuration}{f' ({r.orchestrator})' if shows_modes(summary) else ''}"
            why = status_text(r.status, r.reason)
            missing.setdefault(why, {}).setdefault(what, set()).add(r.replicas)
    not_measured = [
        "; ".join(f"{what} with {_counts(n)} replica{'s' if max(n) > 1 else ''}"
                  for what, n in sorted(cells.items()))
        + f": not measured ({why})."
        for why, cells in sorted(missing.items())
    ]  # fmt: skip
    short = int((summary["n_runs"] > 0).sum() - summary["rps_ci_reached"].astype(bool).sum())
    caption = (
        "Requests per second (2xx responses, wrk closed loop) through each balancer against the "
        "number of replicas behind it. Diamonds are the median across runs of the run's rate, "
        f"vertical bars its {conf:.0%} distribution-free order-statistic interval, small dots "
        "the individual runs. The dashed line is one replica dialled directly without any "
        "balancer (direct), the grey band its interval. In the lab every replica shares the "
        "same cores, so more replicas add no capacity: the gap to the dashed line is what the "
        "balancer costs per request."
    )
    if shows_modes(summary) and len(drawn) > 1:
        caption += (
            " One panel per orchestrator, each against its own direct replica (Docker Swarm: a "
            "container on the default bridge; Kubernetes: a pod dialled at its pod IP)."
        )
    if short:
        caption += (
            f" With too few runs for a {conf:.0%} interval of the median, a bar spans all runs "
            "(the table gives its coverage)."
        )
    if not_measured:
        caption += " " + " ".join(not_measured)
    return chart, caption


def _counts(values: set[int]) -> str:
    """{1, 2, 4} -> "1, 2 or 4"."""
    ordered = [str(v) for v in sorted(values)]
    return ordered[0] if len(ordered) == 1 else f"{', '.join(ordered[:-1])} or {ordered[-1]}"


def _panel(summary: pd.DataFrame, per_run_values: pd.DataFrame, title: str) -> alt.Chart:
    """One mode's chart (faceted by environment when there are several)."""
    frame = summary[(summary["variant"] != BASELINE)].copy()
    frame["orchestrator_name"] = [orchestrator(m) for m in frame["mode"]]
    frame["rps_interval"] = figures.interval_text(frame["rps_lo"], frame["rps_hi"], "{:,.0f}")
    frame["pct_text"] = [
        "n/a" if pd.isna(r) else f"{100 * r:.1f}%" + (
            "" if pd.isna(a) or pd.isna(b) else f" [{100 * a:.1f}, {100 * b:.1f}]")
        for r, a, b in zip(frame["ratio"], frame["ratio_lo"], frame["ratio_hi"], strict=True)
    ]  # fmt: skip
    measured = frame[frame["n_runs"] > 0]
    direct = summary[(summary["variant"] == BASELINE) & (summary["n_runs"] > 0)]
    present = [b for b in BALANCERS if b in set(measured["balancer"])]
    labels = dict(zip(measured["balancer"], measured["configuration"], strict=True))
    color = alt.Color(
        "configuration:N",
        title="Balancer",
        scale=alt.Scale(
            domain=[labels[b] for b in present],
            range=[BALANCER_COLORS.get(b, figures.UNKNOWN_COLOR) for b in present],
        ),
    )
    replicas = sorted(set(frame["replicas"]) | {1})
    x = alt.X(
        "replicas:Q",
        title="Replicas behind the balancer",
        scale=alt.Scale(domain=[min(replicas) - 0.3, max(replicas) + 0.3]),
        axis=alt.Axis(values=replicas, format="d"),
    )
    top = float(np.nanmax(np.r_[summary["rps_hi"], summary["rps"], per_run_values["rps"], 1.0]))
    y = alt.Y("rps:Q", title="Requests per second (2xx)", scale=alt.Scale(domain=[0, top * 1.08]))
    runs = per_run_values[per_run_values["variant"] != BASELINE].merge(
        frame[["environment", "mode", "variant", "configuration"]],
        on=["environment", "mode", "variant"],
    )
    layers = [
        alt.Chart(measured).mark_line(strokeWidth=1.5).encode(x=x, y=y, color=color),
        alt.Chart(runs)
        .mark_circle(size=18, opacity=0.45)
        .encode(x="replicas:Q", y="rps:Q", color=color, tooltip=["variant:N", "run:O", "rps:Q"]),
        alt.Chart(measured)
        .mark_rule(strokeWidth=2)
        .encode(x="replicas:Q", y="rps_lo:Q", y2="rps_hi:Q", color=color),
        alt.Chart(measured)
        .mark_point(shape="diamond", size=90, filled=True)
        .encode(
            x="replicas:Q",
            y="rps:Q",
            color=color,
            tooltip=[
                alt.Tooltip("configuration:N", title="balancer"),
                alt.Tooltip("orchestrator_name:N", title="mode"),
                "replicas:Q",
                alt.Tooltip("rps:Q", format=",.0f", title="median req/s"),
                alt.Tooltip("rps_interval:N", title="interval"),
                alt.Tooltip("n_runs:Q", title="runs"),
                alt.Tooltip("pct_text:N", title="% of direct"),
            ],
        ),  # fmt: skip
    ]
    if len(direct):
        d = direct.iloc[[0]]
        layers[:0] = [
            alt.Chart(d)
            .mark_rect(color="#cccccc", opacity=0.45)
            .encode(y="rps_lo:Q", y2="rps_hi:Q"),
            alt.Chart(d).mark_rule(color="#222222", strokeDash=[5, 3]).encode(y="rps:Q"),
            alt.Chart(d)
            .mark_text(align="left", dx=4, dy=-8, color="#222222")
            .encode(
                y="rps:Q", x=alt.datum(min(replicas) - 0.3), text=alt.value("direct (one replica)")
            ),
        ]
    chart = alt.layer(*layers).properties(width=420, height=280, title=title)
    if summary["environment"].nunique() > 1:
        chart = chart.facet(column="environment:N")
    return chart


# --- files -----------------------------------------------------------------------------------


def write_summary(
    summary: pd.DataFrame, per_run_values: pd.DataFrame, processed_dir: Path | str
) -> list[Path]:
    """Write ``lb_summary.parquet`` (+ ``.csv``) and ``lb_per_run.parquet``."""
    frames = {"lb_summary": summary, "lb_per_run": per_run_values}
    return tables.write_processed(frames, processed_dir)
