"""The interference watch read back: which measured windows had other work beside them.

Collection takes a reading on each host of a measured window before and after it
(``pipeline.collect.watch``) and stores the difference per window and host in the runs table
(``watch``). Here a window is *flagged* when on any of its hosts

- other processes used more than ``cpus`` CPUs on average (``analysis.interference_cpus``),
- steal took more than ``steal`` of the host's CPU capacity (``analysis.interference_steal``),
- or the fixed-work probe beside it took more than ``probe`` times its median on that host
  in the campaign (``analysis.interference_probe``).

Collection applies the same rule as each window ends (``pipeline.data.interference``, the probe
against its host's median so far) and stores the decision with the window (its watch entry's
``why``); a flagged window is kept in the raw data and its (run, mode, path, variant) measured
again later in the campaign, up to ``analysis.interference_retries`` times. The estimates rest
on clean windows: where a step has one, its flagged windows are left out of the per-run values
(``schema.window_flags``, applied where samples are read); where every attempt was flagged, the
flagged windows stay and are counted as kept flagged. The table names each campaign's flagged
windows, how many were measured again and how many stayed in the estimates flagged, and
what ran beside them; the figure shows the contamination over the campaign's time.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from pipeline.data import schema
from pipeline.data.interference import reasons

WINDOW = ["environment", "benchmark", "campaign", "run", "mode", "path", "variant", "rep"]
COLUMNS = [*WINDOW, "host", "t_ns", "seconds", "cpus", "other_cpus", "busy_share",
           "steal_share", "softirq_share", "probe_before_ms", "probe_after_ms", "top",
           "error", "attempt", "decided"]  # fmt: skip
SUMMARY_COLUMNS = ["environment", "benchmark", "campaign", "windows", "flagged",
                   "flagged_share", "remeasured", "kept_flagged", "other_cpus_median",
                   "other_cpus_max", "steal_share_max", "probe_ratio_max",
                   "beside_flagged", "readings_failed"]  # fmt: skip
CAPTION = (
    "Interference watch: per campaign, the measured windows, those flagged (other processes, "
    "steal or a slowed fixed-work probe above the thresholds of params.yaml on a host the "
    "window used), the CPUs other processes used (median and largest window), and what ran "
    "beside the flagged windows. A window flagged as it was measured is measured again later "
    "in the campaign (re-measured); the estimates rest on the clean windows, and a step whose "
    "every attempt was flagged keeps its flagged value (kept flagged)."
)


# collections beside the study's own (data/raw/<collection>/.../<benchmark>/<environment>/)
COLLECTIONS = {"instrument": "instrument check", "wan_calibration": "WAN calibration"}


def campaigns(raw_dir: Path | str) -> list[tuple[Path, tuple[str, ...]]]:
    """Every campaign's ``runs.parquet`` under ``raw_dir`` with its path parts below it; earlier
    campaigns moved aside (``superseded``) and session parts are not read."""
    raw = Path(raw_dir)
    found = ((base, base.relative_to(raw).parts) for base in sorted(raw.rglob("runs.parquet")))
    return [(base, parts) for base, parts in found
            if "superseded" not in parts and "parts" not in parts]  # fmt: skip


def campaign_label(benchmark: str, parts: tuple[str, ...], environment: str) -> str:
    """``benchmark``, or for a campaign of a collection beside the study's own its name with
    the collection's, e.g. "latency (WAN calibration, delay_20ms)"; ``parts``: the campaign's
    path parts under the raw directory."""
    within = next((i for i, p in enumerate(parts) if p in COLLECTIONS), None)
    if within is None:
        return benchmark
    name = [COLLECTIONS[parts[within]]]
    name += [parts[within + 1]] if parts[within + 1] != environment else []
    return f"{benchmark} ({', '.join(name)})"


def windows(raw_dir: Path | str) -> pd.DataFrame:
    """Every watched window and host of every campaign collected under ``raw_dir``: the
    benchmarks' own and those of the instrument check and the WAN calibration (their
    benchmark named with the collection, ``campaign_label``)."""
    rows = []
    for base, parts in campaigns(raw_dir):
        runs = schema.read_table(base, "runs").to_pandas()
        for r in runs.loc[runs["watch"].notna()].itertuples():
            keys = {k: getattr(r, k) for k in WINDOW if k != "rep"}
            keys["benchmark"] = campaign_label(r.benchmark, parts, r.environment)
            # collection's own decision ("why" as the window ended), where it was recorded
            rows += [{**keys, **{k: v for k, v in entry.items() if k != "why"},
                      "decided": entry.get("why") if r.status == "ok" else None}
                     for entry in json.loads(r.watch)]  # fmt: skip
    frame = pd.DataFrame(rows)
    for column in COLUMNS:
        if column not in frame:
            frame[column] = None
    return frame[COLUMNS]


def flag(watched: pd.DataFrame, cpus: float, steal: float, probe: float) -> pd.DataFrame:
    """``watched`` with ``probe_ratio`` (the slower probe beside the window over the host's
    campaign median among the readings taken with the same hosts), ``flagged`` and ``why``
    per window and host."""
    out = watched.copy()
    read = out["error"].isna()
    slower = out[["probe_before_ms", "probe_after_ms"]].astype(float).max(axis=1)
    # the hosts read beside each one (their probes ran at once), as collection compares them
    window = [k for k in (*WINDOW, "attempt") if k in out.columns]
    out["_company"] = out.groupby(window, dropna=False)["host"].transform(
        lambda hosts: ",".join(sorted(hosts)))  # fmt: skip
    median = out.loc[read].groupby(["benchmark", "campaign", "host", "_company"])[
        "probe_before_ms"].transform("median")  # fmt: skip
    out = out.drop(columns="_company")
    out["probe_ratio"] = (slower / median).where(read)
    out["why"] = [
        reasons(o, s, p, cpus, steal, probe)
        for o, s, p in zip(out["other_cpus"].astype(float), out["steal_share"].astype(float),
                           out["probe_ratio"].astype(float), strict=True)
    ]  # fmt: skip
    out["flagged"] = out["why"] != ""
    return out


def flagged_windows(flags: pd.DataFrame) -> pd.DataFrame:
    """One row per measured window: flagged when any of its hosts was."""
    per = flags.groupby(WINDOW, dropna=False).agg(
        flagged=("flagged", "any"), t_ns=("t_ns", "min"),
        other_cpus=("other_cpus", "max"), why=("why", lambda w: "; ".join(sorted(set(w) - {""}))),
    )  # fmt: skip
    return per.reset_index()


def _retry_counts(per_window: pd.DataFrame) -> dict[str, int]:
    """Collection's decisions in one campaign's windows (columns run, mode, path, variant,
    attempt, flagged): windows flagged as they were measured, those whose step was measured
    again after them, and those still in the estimates flagged (no clean window in the step)."""
    if per_window.empty:
        return {"flagged_measured": 0, "remeasured": 0, "kept_flagged": 0}
    step = per_window.groupby(["run", "mode", "path", "variant"])
    flagged = per_window["flagged"].astype(bool)
    later = per_window["attempt"] < step["attempt"].transform("max")
    clean = (~flagged).groupby([per_window[k] for k in ("run", "mode", "path", "variant")]
                               ).transform("any")  # fmt: skip
    return {"flagged_measured": int(flagged.sum()), "remeasured": int((flagged & later).sum()),
            "kept_flagged": int((flagged & ~clean).sum())}  # fmt: skip


def retry_counts(raw_dir: Path | str) -> pd.DataFrame:
    """Per campaign under ``raw_dir`` (as ``windows`` finds them): the measured windows whose
    flag collection decided, how many it flagged (``flagged_measured``), measured again
    (``remeasured``) and finally kept flagged in the estimates (``kept_flagged``). The
    article's numbers on what the re-measurement did."""
    rows = []
    for base, parts in campaigns(raw_dir):
        runs = schema.read_table(base, "runs").to_pandas()
        decided = schema.window_flags(runs)
        for campaign, mine in decided.groupby("campaign"):
            first = mine.iloc[0]
            rows.append({"environment": first["environment"],
                         "benchmark": campaign_label(runs["benchmark"].iloc[0], parts,
                                                     first["environment"]),
                         "campaign": campaign, "windows": len(mine), **_retry_counts(mine)})
    columns = ["environment", "benchmark", "campaign", "windows", "flagged_measured",
               "remeasured", "kept_flagged"]  # fmt: skip
    return pd.DataFrame(rows, columns=columns)


def summary(flags: pd.DataFrame) -> pd.DataFrame:
    """Per campaign: windows, flagged ones, those measured again and those kept flagged, what
    ran beside the flagged ones. Flagged is collection's decision as each window ended, which
    the re-measurement and the estimates follow; a campaign that recorded none is judged here
    by the thresholds given to ``flag`` (against each host's median probe over the campaign,
    where collection had only the median so far)."""
    rows = []
    per_window = flagged_windows(flags)
    # a campaign is its collection's label and its id: two collections may hold one id (the
    # instrument check's copy of a benchmark's rows, in the fixtures)
    key = ["environment", "benchmark", "campaign"]
    decided = flags.loc[flags["decided"].notna()].groupby(
        [*key, "run", "mode", "path", "variant", "rep"], dropna=False).agg(
        attempt=("attempt", "max"), flagged=("decided", lambda w: any(w != "")),
    ).reset_index()  # fmt: skip
    for (env, bench, campaign), group in flags.groupby(key):
        mine, steps = (f[(f["environment"] == env) & (f["benchmark"] == bench)
                         & (f["campaign"] == campaign)] for f in (per_window, decided))  # fmt: skip
        read = group[group["error"].isna()]
        counts = _retry_counts(steps)
        if len(steps):  # collection decided: its flags are the ones that counted
            flagged = counts["flagged_measured"]
            on = read["decided"].fillna("").astype(str) != ""
        else:
            flagged, on = int(mine["flagged"].sum()), read["flagged"].astype(bool)
        beside = read.loc[on, "top"].dropna()
        names = pd.Series([t.split(" ")[0] for tops in beside for t in tops.split(", ") if t])
        rows.append({
            "environment": env, "benchmark": bench, "campaign": campaign,
            "windows": len(mine), "flagged": flagged,
            "flagged_share": flagged / len(mine) if len(mine) else None,
            **{k: v for k, v in counts.items() if k != "flagged_measured"},
            "other_cpus_median": read["other_cpus"].astype(float).median(),
            "other_cpus_max": read["other_cpus"].astype(float).max(),
            "steal_share_max": read["steal_share"].astype(float).max(),
            "probe_ratio_max": read["probe_ratio"].max(),
            "beside_flagged": ", ".join(names.value_counts().index[:3]),
            "readings_failed": int(group["error"].notna().sum()),
        })  # fmt: skip
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


def table(summary_frame: pd.DataFrame) -> pd.DataFrame:
    """The article's table: one row per campaign."""
    return pd.DataFrame({
        "Benchmark": summary_frame["benchmark"],
        "Environment": summary_frame["environment"],
        "Windows": summary_frame["windows"],
        "Flagged": [f"{f} ({s:.0%})" if s == s else "n/a"
                    for f, s in zip(summary_frame["flagged"], summary_frame["flagged_share"],
                                    strict=True)],
        "Other CPUs, median / max": [
            f"{a:.2f} / {b:.2f}" for a, b in zip(summary_frame["other_cpus_median"],
                                                 summary_frame["other_cpus_max"], strict=True)
        ],
        "Steal, max": [f"{v:.1%}" for v in summary_frame["steal_share_max"]],
        "Probe, max x median": [f"{v:.2f}" for v in summary_frame["probe_ratio_max"]],
        "Beside flagged windows": summary_frame["beside_flagged"].replace("", "-"),
        "Readings failed": summary_frame["readings_failed"],
        "Re-measured": summary_frame["remeasured"],
        "Kept flagged": summary_frame["kept_flagged"],
    })  # fmt: skip


def figure(flags: pd.DataFrame, cpus: float):
    """Other processes' CPUs per measured window over each campaign's time, flagged windows
    marked, the threshold as a rule; one panel per campaign's benchmark, three to a row."""
    import altair as alt

    per = flagged_windows(flags).dropna(subset=["t_ns"]).copy()
    start = per.groupby("campaign")["t_ns"].transform("min")
    per["minutes"] = (per["t_ns"].astype(float) - start.astype(float)) / 60e9
    per["other_cpus"] = per["other_cpus"].astype(float)
    per["window"] = per["flagged"].map({True: "flagged", False: "clean"})
    points = alt.Chart().mark_point(filled=True, size=18).encode(
        x=alt.X("minutes:Q", title="minutes since the campaign's first window"),
        y=alt.Y("other_cpus:Q", title="CPUs used by other processes"),
        color=alt.Color("window:N", scale=alt.Scale(domain=["clean", "flagged"],
                                                    range=["#9ecae1", "#d62728"])),
        tooltip=["benchmark", "mode", "path", "variant", "run", "rep", "other_cpus", "why"],
    )  # fmt: skip
    per["threshold"] = cpus
    rule = alt.Chart().mark_rule(strokeDash=[4, 3]).encode(y="threshold:Q")
    chart = alt.layer(points, rule, data=per).properties(width=220, height=140).facet(
        facet=alt.Facet("benchmark:N", title=None), columns=3
    ).resolve_scale(x="independent")
    caption = (
        f"Interference watch: CPUs used by processes other than the study's during each "
        f"measured window (the largest over the window's hosts), over each campaign's time; "
        f"red windows are flagged; the dashed line is the {cpus:g}-CPU threshold."
    )
    return chart, caption
