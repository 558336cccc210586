"""Methods and Limitations: how the numbers were obtained and what they cannot say.

Methods: the hosts as recorded, the modes, runs and cells per benchmark, the statistics and the
margins fixed before the data, the WAN emulator's calibration, the instrument check, run-to-run
noise and the duty cycle. Limitations: every skipped or failed step with its recorded reason
(each distinct reason quoted once, naming the steps it stopped) and every benchmark not
collected.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence

import pandas as pd

from pipeline.analysis import figures
from pipeline.analysis.article.comparisons import comparisons
from pipeline.analysis.article.inputs import (
    SHIFT_T,
    Inputs,
    figure_blocks,
    label,
    missing,
    on_path,
    tables_for,
)
from pipeline.analysis.article.numbers import Number, Numbers
from pipeline.analysis.article.sections import Section, grid, missing_text

FAR_FROM_NATIVE = 2.0  # a mode this many times native's level (or its inverse) or more
WAN_TABLES = ["wan_calibration_sentence", "wan_calibration"]
INSTRUMENT_TABLES = ["instrument_aa", "instrument_injected"]
NOISE_TABLES = ["noise"]


HOST_COLUMNS = [
    ("host", "Host"),
    ("role", "Role"),
    ("kernel", "Kernel"),
    ("cpu_model", "CPU"),
    ("cpu_count", "Cores"),
    ("mem_total_bytes", "Memory GiB"),
    ("docker_version", "Docker"),
    ("containerd_version", "containerd"),
    ("runc_version", "runc"),
    ("storage_driver", "Storage driver"),
    ("cgroup_version", "cgroup"),
    ("mtu", "MTU"),
    ("ipvs", "IPVS"),
    ("netem", "netem"),
]
NUMERIC_HOST = {"cpu_count": "cores", "mem_total_bytes": "GiB", "mtu": "bytes"}


def _hosts(inputs: Inputs, numbers: Numbers, benchmarks: list[str]) -> list[str]:
    frames = [f for b in benchmarks if (f := inputs.raw_table(b, "hosts")) is not None]
    if not frames:
        return ["No hosts table was collected."]
    hosts = pd.concat(frames, ignore_index=True)
    cols = [c for c, _ in HOST_COLUMNS]
    for col in NUMERIC_HOST:  # int in one table, float (nullable) in another: one spelling
        hosts[col] = pd.to_numeric(hosts[col], errors="coerce")
    facts = [c for c in cols if c not in ("host", "role")]
    hosts["named"] = "`" + hosts["host"].astype(str) + "` (" + hosts["role"].astype(str) + ")"
    source = inputs.raw
    shown = [(c, t) for c, t in HOST_COLUMNS if c not in ("host", "role")]
    lines = [
        "| Environment | Hosts | " + " | ".join(t for _, t in shown) + " |",
        "| " + " | ".join([":---"] * (len(shown) + 2)) + " |",
    ]
    groups = hosts.groupby(["environment", *facts], sort=False, dropna=False)
    for index, (key, rows) in enumerate(groups):
        env, values = key[0], dict(zip(facts, key[1:], strict=True))
        suffix = f".{index}" if groups.ngroups > 1 else ""
        cells = [f"`{env}`", ", ".join(dict.fromkeys(rows["named"]))]
        for col, _ in shown:
            value = values[col]
            if missing(value):
                cells.append("n/a")
            elif col in NUMERIC_HOST:
                v = float(value) / 2**30 if col == "mem_total_bytes" else float(value)
                n = numbers.add(
                    f"hosts.{env}{suffix}.{col}", v, NUMERIC_HOST[col], source,
                    decimals=1 if col == "mem_total_bytes" else 0,
                )  # fmt: skip
                cells.append(n.text())
            else:
                cells.append(f"`{value}`")
        lines.append("| " + " | ".join(cells) + " |")
    intro = "Hosts, as recorded by every campaign (one row per distinct set of facts):"
    return [intro, "\n".join(lines)]


def _runs(inputs: Inputs, numbers: Numbers, benchmarks: list[str]) -> list[str]:
    """One row per benchmark: its (mode, path, variant) cells, runs, distinct measurement
    orders, measured runs per cell and pooled samples per cell."""
    rows = []
    for b in benchmarks:
        runs = inputs.raw_table(b, "runs")
        if runs is None:
            continue
        key = f"methods.{b}"
        src = inputs.raw / b
        n_runs = numbers.add(f"{key}.runs", runs["run"].nunique(), "runs", src)
        cells = runs[["mode", "path", "variant"]].drop_duplicates()
        n_cells = numbers.add(f"{key}.cells", len(cells), "(mode, path, variant) cells", src)
        orders = runs.sort_values(["run", "order"]).groupby("run")["mode"].apply(lambda m: tuple(m))
        n_orders = numbers.add(f"{key}.distinct_orders", orders.nunique(), "orders", src)
        ok = runs[runs["status"] == "ok"].groupby(["mode", "path", "variant"])["run"].nunique()
        per_cell = samples = ""
        if len(ok):
            lo = numbers.add(f"{key}.ok_runs_per_cell_min", ok.min(), "runs", src)
            hi = numbers.add(f"{key}.ok_runs_per_cell_max", ok.max(), "runs", src)
            per_cell = _span(lo, hi)
        found = inputs.summary(b, f"{b}_summary")
        if found is not None and "n_samples" in found[0].columns:
            s = found[0][found[0]["status"] == "ok"]["n_samples"]
            if len(s):
                lo = numbers.add(f"{key}.samples_per_cell_min", s.min(), "samples", found[1])
                hi = numbers.add(f"{key}.samples_per_cell_max", s.max(), "samples", found[1])
                samples = _span(lo, hi)
        rows.append(f"| `{b}` | {n_cells.text()} | {n_runs.text()} | {n_orders.text()} | "
                    f"{per_cell} | {samples} |")  # fmt: skip
    if not rows:
        return []
    head = ("| Benchmark | Cells | Runs | Distinct orders | Measured runs per cell | Samples per "
            "cell (runs pooled) |")  # fmt: skip
    return [head, "| :--- | :--- | :--- | :--- | :--- | :--- |", *rows]


def _span(lo: Number, hi: Number) -> str:
    return lo.text() if lo.text() == hi.text() else f"{lo.text()} to {hi.text()}"


def _modes(inputs: Inputs, benchmarks: list[str]) -> str:
    modes: set[str] = set()
    for b in benchmarks:
        runs = inputs.raw_table(b, "runs")
        if runs is not None:
            modes |= set(runs["mode"])
    if not modes:
        return "Modes in this campaign: none (no runs table was collected)."
    ordered = sorted(modes, key=lambda m: (figures.mode_rank(m), m))
    return "Modes in this campaign: " + ", ".join(f"{label(m)} (`{m}`)" for m in ordered) + "."


def _seeds(inputs: Inputs) -> set:
    seeds = set()
    for b in ("throughput", "latency", "http"):
        found = inputs.summary(b, f"{b}_summary")
        if found is not None and "seed" in found[0].columns:
            seeds |= set(found[0]["seed"].dropna().astype(int))
    return seeds


def _duty_cycle(inputs: Inputs, numbers: Numbers, benchmarks: list[str]) -> list[str]:
    """A table row per campaign with a session record (duty cycle, seconds inside its windows
    and of wall time, the harness's server and client seconds where recorded, where its hosts
    ran), then one line per reason a campaign has no record."""
    rows: list[list[str]] = []
    unrecorded: dict[str, list[str]] = {}
    for b in benchmarks:
        for dataset in sorted((inputs.raw / b).glob("*/runs.parquet")):
            env = dataset.parent.name
            record = dataset.parent / "campaign.json"
            if not record.exists():
                unrecorded.setdefault("no campaign.json", []).append(f"`{b}` (`{env}`)")
                continue
            data = json.loads(record.read_text())
            if data.get("duty_cycle") is None:
                unrecorded.setdefault("no session timings", []).append(f"`{b}` (`{env}`)")
                continue
            key = f"methods.{b}.{env}.duty_cycle"
            d = numbers.add(key, data["duty_cycle"], "fraction", record, decimals=2)
            w = numbers.add(f"{key}.window_s", data["window_s"], "s", record, decimals=0)
            t = numbers.add(f"{key}.wall_s", data["wall_s"], "s", record, decimals=0)
            servers = client = "n/a"
            if data.get("client_s") is not None:  # not every campaign record splits the overhead
                servers = numbers.add(f"{key}.servers_s", data["deploy_s"] + data["stop_s"],
                                      "s", record, decimals=0).text()  # fmt: skip
                client = numbers.add(f"{key}.client_overhead_s", data["client_overhead_s"],
                                     "s", record, decimals=0).text()  # fmt: skip
            where = _placement(data.get("placements") or []).removeprefix("; ") or "not recorded"
            rows.append([f"`{b}` (`{env}`)", d.text(), w.text(), t.text(), servers, client,
                         where])  # fmt: skip
    lines = [grid(["Campaign", "Duty cycle", "Inside windows, s", "Wall, s",
                   "Starting and stopping servers, s", "Client commands outside windows, s",
                   "Hosts' CPUs"], rows)] if rows else []  # fmt: skip
    for why, named in unrecorded.items():
        lines.append(f"Not recorded ({why}): {', '.join(named)}.")
    return lines


# What a Stein-planned campaign's intervals cover (tests/unit/test_planning.py simulates it): a
# 3-run pilot, at most 10 or 20 runs, per-run SDs 0.01 to 0.1, the cap biting or not: 95 +- 1%.
PLANNED_COVERAGE = {"pilot_runs": 3, "max_runs_lo": 10, "max_runs_hi": 20, "label_pct": 95,
                    "within_pct": 1}  # fmt: skip
# A campaign planned before Stein's rule (its record names no ``rule``) stopped once its running
# interval was narrow enough and has the usual t intervals: 90-93% in that rule's simulation.
EARLIER_RULE_COVERAGE = {"pilot_runs": 3, "max_runs": 15, "label_pct": 95, "lo_pct": 90,
                         "hi_pct": 93}  # fmt: skip


def _planning(inputs: Inputs, numbers: Numbers, benchmarks: list[str]) -> list[str]:
    """The precision-planned campaigns (their campaign.json's ``planning`` record), with what
    their rule does to the intervals: Stein's (``rule`` "stein") and a count fixed before the
    data ("fixed") keep their 95%, the earlier stop rule did not; nothing when no campaign was
    planned."""
    lines: dict[str, list[list[str]]] = {"stein": [], "fixed": [], "earlier": []}
    for b in benchmarks:
        for record in sorted((inputs.raw / b).glob("*/campaign.json")):
            plan = json.loads(record.read_text()).get("planning") or {}
            if not plan.get("planned"):
                continue
            rule = plan.get("rule") if plan.get("rule") in ("stein", "fixed") else "earlier"
            key = f"methods.{b}.{record.parent.name}.planning"
            pilot = numbers.add(f"{key}.pilot_runs", plan["pilot_runs"], "runs", record)
            rounds = numbers.add(f"{key}.rounds", plan.get("rounds", 0), "runs", record)
            if rule == "fixed":
                runs = numbers.add(f"{key}.max_runs", plan["max_runs"], "runs", record)
                aim = f"{runs.text()} runs per headline comparison"
            else:
                target = numbers.add(f"{key}.target_half_width", plan["target_half_width"],
                                     "log ratio", record, decimals=3)  # fmt: skip
                aim = f"half-width {target.text()} of the log ratio"
            stops: dict[str, int] = {}
            for cell in plan.get("cells", []):
                if "half_width" in cell:  # a comparison with native
                    why = cell.get("stopped") or "going on"
                    stops[why] = stops.get(why, 0) + 1
            said = [f"{numbers.add(f'{key}.stopped.{why}', n, 'comparisons', record).text()} {why}"
                    for why, n in sorted(stops.items())]  # fmt: skip
            lines[rule].append([f"`{b}` (`{record.parent.name}`)", pilot.text(), rounds.text(),
                                aim, ", ".join(said) or "none"])  # fmt: skip
    out = []
    sim = "simulation: tests/unit/test_planning.py"
    if lines["stein"]:
        c = {k: numbers.add(f"methods.planning.coverage.{k}", v,
                            "runs" if "runs" in k else "%", sim)
             for k, v in PLANNED_COVERAGE.items()}  # fmt: skip
        out.append(
            "Precision-planned campaigns, by Stein's two-stage rule: each comparison's run count "
            "is fixed from its pilot's SD alone (enough runs for the target half-width, capped "
            "by the most runs and the budget), and its interval uses the pilot's SD with the "
            "pilot's degrees of freedom. It covers exactly its 95% when per-run log ratios are "
            "normal; a cap widens it but does not lower its coverage (in simulation, a "
            f"{c['pilot_runs'].text()}-run pilot and at most {c['max_runs_lo'].text()} or "
            f"{c['max_runs_hi'].text()} runs: {c['label_pct'].text()}% "
            f"+- {c['within_pct'].text()} point):\n\n" + _plan_table(lines["stein"])
        )
    if lines["fixed"]:
        out.append(
            "Headline comparisons given a run count fixed before any data (the others keep "
            "their pilot's runs): their intervals are the usual t intervals on all their runs, "
            "exact at their confidence when per-run log ratios are normal:\n\n"
            + _plan_table(lines["fixed"])
        )
    if lines["earlier"]:
        earlier = "simulation: the stop rule before Stein's (docs/methods.md, precision planning)"
        c = {k: numbers.add(f"methods.planning.earlier_rule.{k}", v,
                            "runs" if "runs" in k else "%", earlier)
             for k, v in EARLIER_RULE_COVERAGE.items()}  # fmt: skip
        out.append(
            "Precision-planned campaigns (runs added where an interval was still wider than its "
            "target, within a budget; the rule looks at the half-width only). Stopping when the "
            "sample SD happens to be small leaves the last interval too narrow: in simulation "
            f"(a {c['pilot_runs'].text()}-run pilot, at most {c['max_runs'].text()} runs) their "
            f"intervals labelled {c['label_pct'].text()}% cover "
            f"{c['lo_pct'].text()}-{c['hi_pct'].text()}%:"
            "\n\n" + _plan_table(lines["earlier"])
        )
    return out


def _plan_table(rows: list[list[str]]) -> str:
    return grid(["Campaign", "Pilot runs", "Planned runs", "Aim", "Comparisons stopped by"],
                rows)  # fmt: skip


def _placement(placements: list[dict]) -> str:
    """The lab's CPU placement of a campaign's sessions, as a clause of its duty-cycle line."""
    said = []
    for p in placements:
        if p["placement"] == "unavailable":
            said.append(f"CPU placement not applied: {p['reason']}")
        elif p["placement"] == "split":
            server, client = p["cpus"]["node1"], p["cpus"]["dc-client"]
            said.append(f"servers' hosts on CPU {server}, clients' hosts on CPU {client}")
        elif p["placement"] == "colocated":
            said.append(f"every host on CPU {p['cpus']['node1']}")
        else:
            said.append("every host on every CPU")
    return "; " + "; ".join(said) if said else ""


def _wan(inputs: Inputs, numbers: Numbers) -> list[str]:
    path = inputs.tables / "wan_calibration.csv"
    if not path.exists():
        return [
            "WAN emulator calibration: not measured in this campaign (stages "
            "`collect-wan-calibration` and `summarise-wan-calibration` produce it)."
        ]
    table = pd.read_csv(path, dtype=str)
    measured = [c for c in table.columns if c.startswith("Measured added RTT")]
    excess = [c for c in table.columns if c.startswith("Emulator excess")]
    lines = [
        "WAN emulator calibration (native server, Internet minus datacenter round trip, at the "
        "median):\n",
        "| One-way delay | Protocol | Round trip grew by | Expected | Emulator excess |",
        "| :--- | :--- | :--- | :--- | :--- |",
    ]
    for r in table.to_dict("records"):
        if not measured or r["Quantile"] != "p50":
            continue
        key = f"wan_calibration.{r['One-way delay (ms)']}ms.{r['Protocol'].lower()}.p50"
        delay = numbers.add(f"{key}.delay_ms", _parse(r["One-way delay (ms)"]), "ms", path)
        expected_us = _parse(r["Expected added RTT (us)"])
        expected = numbers.add(f"{key}.expected_us", expected_us, "us", path, decimals=0)
        m = _interval(r[measured[0]])
        e = _interval(r[excess[0]]) if excess else None
        add = numbers.add(f"{key}.added_us", *m[:1], "us", path, *m[1:], inputs.confidence,
                          SHIFT_T, decimals=0)  # fmt: skip
        extra = ""
        if e is not None:
            ex = numbers.add(f"{key}.excess_us", e[0], "us", path, e[1], e[2], inputs.confidence,
                             SHIFT_T, decimals=0)  # fmt: skip
            extra = ex.with_ci(" us", signed=True)
        lines.append(f"| {delay.text()} ms | {r['Protocol']} | {add.with_ci(' us')} | "
                     f"{expected.text()} us | {extra} |")  # fmt: skip
    return ["\n".join(lines), *tables_for(inputs, WAN_TABLES, "Methods: WAN emulator calibration")]


def _instrument(inputs: Inputs, numbers: Numbers) -> list[str]:
    """The instrument check: A/A counts and rate, injected vs recovered (pipeline/instrument)."""
    rate_path = inputs.processed / "instrument" / "instrument_rate.json"
    found = inputs.summary("instrument", "instrument_injected_summary")
    if not rate_path.exists() or found is None:
        return [
            "Instrument check (A/A, injected overheads): not measured in this campaign (stages "
            "`collect-instrument` and `summarise-instrument` produce it)."
        ]
    rate = json.loads(rate_path.read_text())
    # The stage's own sentence says what the paragraph below says: not repeated at the end.
    inputs.used_tables.add("instrument_sentence.md")
    n = numbers.add("instrument.aa.comparisons", rate["comparisons"], "count", rate_path)
    counts = {
        v: numbers.add(f"instrument.aa.{v}", rate[v], "count", rate_path)
        for v in ("equivalent", "inconclusive", "false_differences")
    }
    text = (
        f"Instrument check, A/A: native measured under a second name in the same randomised "
        f"campaigns gave {n.text()} comparisons, decided by the study's own summaries: "
        f"{counts['equivalent'].text()} equivalent, {counts['inconclusive'].text()} "
        f"inconclusive, {counts['false_differences'].text()} called a difference"
    )
    if rate.get("false_difference_rate") is not None:
        share = 100 * rate["false_difference_rate"]
        pct = numbers.add("instrument.aa.false_difference_pct", share, "%", rate_path, decimals=1)
        text += f" (false-difference rate {pct.text()}%)"
    paragraphs = [text + "."]
    injected, path = found
    rows = []
    for r in injected.itertuples():
        key = f"instrument.injected.{r.environment}.{r.control}.{r.variant}".replace(" ", "_")
        exp = numbers.add(f"{key}.expected", r.expected, r.unit, path)
        got = numbers.add(f"{key}.recovered", r.recovered, r.unit, path, r.recovered_lo,
                          r.recovered_hi, r.coverage, r.interval_kind)  # fmt: skip
        inside = "n/a" if pd.isna(r.recovered_within) else (
            "yes" if r.recovered_within else "no")  # fmt: skip
        err = numbers.add(f"{key}.error_pct", r.error_pct, "%", path, decimals=2)
        rows.append([f"{r.injected} (`{r.variant}`)", f"{exp.text()} {r.unit}",
                     f"{got.with_ci()} {r.unit}", f"{err.text(signed=True)}%", inside])  # fmt: skip
    if rows:
        paragraphs.append(
            "Injected overheads, recovered by the same pipeline:\n\n"
            + grid(["Injected", "Expected", "Recovered", "Error", "Expected inside the interval"],
                   rows)  # fmt: skip
        )
    blocks = figure_blocks(inputs, numbers, "instrument")
    blocks += tables_for(inputs, INSTRUMENT_TABLES, "Methods: instrument check")
    return [*paragraphs, *blocks]


def _noise(inputs: Inputs, numbers: Numbers) -> list[str]:
    """Run-to-run noise per benchmark (pipeline/analysis/noise.py): the range of the SD of one
    configuration's per-run value, as % of native's mean, over the benchmark's cells."""
    found = inputs.summary("noise", "noise_summary")
    if found is None:
        return ["Run-to-run noise: not analysed in this campaign (stage `summarise-noise`)."]
    noise, path = found
    fitted = noise[noise["status"] == "ok"].dropna(subset=["cv_sd_within_pct"])
    if fitted.empty:
        why = sorted(set(noise["reason"].dropna())) or ["no benchmark with a native baseline"]
        return [f"Run-to-run noise: not estimated ({'; '.join(why)})."]
    # One SD for every mode, relative to native's mean, reads as a relative noise only when the
    # modes sit near native's level; where a mode runs at several times native's (cold start),
    # it is the spread of the slow modes over native's small mean, and says nothing of a ratio.
    far: dict[str, float] = {}
    for c in comparisons(inputs.processed):
        size = max(c.ratio, 1 / c.ratio) if c.ratio > 0 else math.inf
        if size >= FAR_FROM_NATIVE:
            far[c.benchmark] = max(far.get(c.benchmark, 0.0), size)
    left_out = [b for b in dict.fromkeys(fitted["benchmark"]) if b in far]
    fitted = fitted[~fitted["benchmark"].isin(left_out)]
    # The Internet path's comparisons are judged on the microseconds a mode adds, not on a
    # ratio: a relative SD there (a 40 ms round trip's jitter) is no noise floor of a ratio.
    internet = fitted["path"].eq("internet")
    wan = sorted(set(fitted.loc[internet, "benchmark"]))
    fitted = fitted[~internet]
    parts = []
    for bench, rows in fitted.groupby("benchmark", sort=False):
        ends = []
        for r in (rows.loc[rows["cv_sd_within_pct"].idxmin()],
                  rows.loc[rows["cv_sd_within_pct"].idxmax()]):  # fmt: skip
            key = f"noise.{bench}.{r['environment']}.{r['path']}.{r['variant']}.{r['metric']}"
            lo, hi = r["cv_sd_within_lo_pct"], r["cv_sd_within_hi_pct"]
            cv = numbers.add(f"{key}.cv_pct", r["cv_sd_within_pct"], "%", path, lo, hi,
                             r["confidence"], "parametric bootstrap", decimals=2)  # fmt: skip
            ends.append(cv)
        span = ends[0].text() if ends[0].key == ends[1].key else (
            f"{ends[0].text()}% to {ends[1].text()}")  # fmt: skip
        parts.append(f"{bench} {span}%")
    text = (
        "Noise floor of this machine. Run-to-run noise (SD of one configuration's per-run value "
        "across runs, from a mixed model with mode fixed and run random, as % of native's mean; "
        "smallest to largest over each benchmark's variants, paths and statistics): "
        + "; ".join(parts) + "."
    ) if parts else "Noise floor of this machine: no benchmark whose modes stay near native's."
    if left_out:
        said = []
        for bench in left_out:
            x = numbers.add(f"noise.{bench}.left_out.max_x_native", far[bench], "x native",
                            inputs.processed, decimals=1)  # fmt: skip
            said.append(f"{bench} (a mode at {x.text()}x native)")
        text += (
            f" Left out: {', '.join(said)}, where one SD as % of native's mean is the slow "
            "modes' spread over native's small mean, no relative noise; its comparisons' own "
            "intervals (the findings table) say what its runs resolve."
        )
    if wan:
        text += (
            f" The Internet path ({', '.join(wan)}) is left out: its comparisons are on the "
            "microseconds a mode adds (the Internet vs datacenter section sets them beside its "
            "run-to-run SD)."
        )
    sized = fitted.dropna(subset=["resolvable_pct"]) if "resolvable_pct" in fitted else fitted[:0]
    if not sized.empty:
        lo = sized.loc[sized["resolvable_pct"].idxmin()]
        hi = sized.loc[sized["resolvable_pct"].idxmax()]
        small = numbers.add("noise.resolvable_min_pct", lo["resolvable_pct"], "%", path,
                            decimals=1)  # fmt: skip
        large = numbers.add("noise.resolvable_max_pct", hi["resolvable_pct"], "%", path,
                            decimals=1)  # fmt: skip
        span = f"{small.text()}% ({lo['benchmark']})"
        if (small.text(), lo["benchmark"]) != (large.text(), hi["benchmark"]):
            span += f" to {large.text()}% ({hi['benchmark']})"
        text += (
            " With the runs measured, a paired comparison with native resolves differences of "
            f"{span}; a smaller difference cannot be told from this noise here, whatever its "
            "verdict says."
        )
    return [text, *tables_for(inputs, NOISE_TABLES, "Methods: run-to-run noise")]


def _interference(inputs: Inputs, numbers: Numbers) -> list[str]:
    """The interference watch (pipeline/analysis/interference.py): how many measured windows
    had other work beside them, and what."""
    found = inputs.summary("noise", "interference_summary")
    if found is None:
        return ["Interference watch: not analysed in this campaign (stage `summarise-noise`)."]
    if found[0].empty:
        return ["Interference watch: no measured window was watched in this campaign."]
    watch, path = found
    windows = numbers.add("interference.windows", int(watch["windows"].sum()), "windows", path,
                          decimals=0)  # fmt: skip
    flagged = numbers.add("interference.flagged", int(watch["flagged"].sum()), "windows", path,
                          decimals=0)  # fmt: skip
    names = [n for text in watch["beside_flagged"] for n in str(text).split(", ") if n]
    beside = f"; beside them ran {', '.join(dict.fromkeys(names))}" if names else ""
    counts = {c: int(pd.to_numeric(watch[c], errors="coerce").fillna(0).sum())
              for c in ("remeasured", "kept_flagged") if c in watch}  # fmt: skip
    if counts:
        again = numbers.add("interference.remeasured", counts.get("remeasured", 0), "windows",
                            path, decimals=0)  # fmt: skip
        kept = numbers.add("interference.kept_flagged", counts.get("kept_flagged", 0), "windows",
                           path, decimals=0)  # fmt: skip
        rule = (f"A flagged window's step was measured again later in its campaign "
                f"({again.text()} windows), and the estimates leave a flagged window out where "
                f"its step has a clean one; {kept.text()} flagged windows stayed in the "
                f"estimates because every attempt at their step was flagged.")
    else:
        rule = "These campaigns recorded no re-measurement: their flagged windows stay in."
    text = (
        f"Interference watch. Before and after every measured window each host it used was "
        f"read: the CPU time of processes other than the study's, steal, and a fixed-work "
        f"probe. {flagged.text()} of {windows.text()} measured windows were flagged as they "
        f"ended (other processes, steal or a slowed probe above the thresholds of "
        f"params.yaml){beside}. "
        f"{rule} The table names them per campaign."
    )
    blocks = figure_blocks(inputs, numbers, "noise")
    return [text, *blocks, *tables_for(inputs, ["interference"], "Methods: interference watch")]


def _parse(text: str) -> float:
    return float(str(text).replace(",", ""))


def _interval(text: str) -> tuple[float, float, float]:
    """ "40,123 [40,091, 40,145]" -> (40123, 40091, 40145); the separator is ", " (with a
    space), thousands separators have none. A cell without an interval ("19 (one run: no
    interval)") gives NaN bounds, which the prose leaves out."""
    point, bracket, rest = str(text).partition("[")
    if not bracket:
        return _parse(point.split("(", 1)[0]), math.nan, math.nan
    lo, hi = rest.rstrip("] ").split(", ")
    return _parse(point), _parse(lo), _parse(hi)


def methods(inputs: Inputs, numbers: Numbers, benchmarks: list[str]) -> str:
    """The Methods section: hosts, modes, runs, statistics, WAN, instrument, noise, duty cycle."""
    conf = numbers.add(
        "methods.confidence_pct", round(100 * inputs.confidence, 9), "%", "parameters"
    )
    level = round(100 * (2 * inputs.confidence - 1), 9)  # 89.99999999999999 is 90
    eq = numbers.add("methods.equivalence_level_pct", level, "%", "parameters")
    margins = []
    for name in sorted(inputs.margins):
        pct = round(100 * inputs.margins[name], 9)
        m = numbers.add(f"methods.margin.{name}_pct", pct, "%", "parameters")
        margins.append(f"{name} ±{m.text()}%")
    blocks = ["## Methods"]
    blocks += _noise(inputs, numbers)
    blocks += _interference(inputs, numbers)
    blocks += _hosts(inputs, numbers, benchmarks)
    blocks.append(_modes(inputs, benchmarks))
    blocks.append(
        "Runs and cells per benchmark (a run measures every cell once, in an order drawn from a "
        "seeded random permutation of that run's cells, each after a recorded warm-up):"
    )
    blocks.append("\n".join(_runs(inputs, numbers, benchmarks)) or "No runs were collected.")
    seeds = sorted(_seeds(inputs))
    # A seed is an identifier, not a quantity: a code span, as written in the summaries.
    seed_text = " Simulation seed: " + ", ".join(f"`{s}`" for s in seeds) + "." if seeds else ""
    blocks.append(
        f"Statistics: per-run values are the unit of inference; every interval is at "
        f"{conf.text()}%. A ratio to native is the geometric mean of the per-run ratios over "
        f"the runs both measured, with its Student t interval, the estimate the verdict tests. "
        f"Equivalence margins on the ratio to native, fixed before any data: "
        f"{', '.join(margins)}. A mode is called equivalent when the {eq.text()}% interval of "
        f"its ratio lies inside the margin (a paired TOST); otherwise an overhead (or faster) "
        f"when a paired t test on the per-run log ratios rejects parity, else inconclusive, "
        f"with the smallest difference the runs could resolve. Both tests need at least 3 "
        f"paired runs, and each table's p-values are adjusted together for multiplicity (its "
        f"caption names the method).{seed_text}"
    )
    blocks += _planning(inputs, numbers, benchmarks)
    blocks += _wan(inputs, numbers)
    blocks += _instrument(inputs, numbers)
    duty = _duty_cycle(inputs, numbers, benchmarks)
    blocks.append(
        "Duty cycle (seconds inside load windows / wall seconds of the campaign), the harness's "
        "own seconds where the campaign recorded them (client commands: SSH and the tool's own "
        "start-up), and, on the embedded lab, where its hosts ran (they share one machine's "
        "CPUs: \"every host on every CPU\" leaves a client and its server to the scheduler, "
        "which now and then puts them on one CPU; a colocated placement puts every host on one "
        "CPU, a split one gives the server's host and the clients' hosts disjoint CPUs):\n\n"
        + ("\n\n".join(duty) if duty else "not recorded.")
    )
    return "\n\n".join(b for b in blocks if b != "")


# --- limitations -----------------------------------------------------------------------------


_STATUS = re.compile(r"^\s*(skipped|failed):\s*")
# Lines of recorded tool output that are never the reason itself: the tool pointing at its help,
# the command echoed ("$ docker run ..."), the header of a captured stream ("stderr (last 20
# lines):").
_NOT_THE_REASON = re.compile(
    r"^(See '[^']*--help'|Run '[^']*--help'|Try '[^']*--help'|Usage:|For more (help|information)"
    r"|\$ |(stderr|stdout)\b[^:]*:$)",
    re.I,
)


def first_line(text) -> tuple[str, bool]:
    """A recorded reason's first meaningful line, and whether more was recorded.

    The status prefix, blank lines, usage hints, echoed commands and stream headers go; a line
    that only introduces the next ("on host node1: command exited with status 125:") is joined
    with it.
    """
    text = "" if missing(text) else str(text)
    lines = [x.strip() for x in _STATUS.sub("", text).strip().splitlines()]
    kept = [x for x in lines if x and not _NOT_THE_REASON.match(x)]
    if not kept:
        return "", False
    used = 2 if kept[0].endswith(":") and len(kept) > 1 else 1
    first = " ".join(kept[:used])
    return _STATUS.sub("", first), sum(1 for x in lines if x) > used


def _reason(text) -> str:
    """A recorded reason, quoted as recorded (its numbers, "after 300 pings", are the tool's
    words, not the article's: the quotes mark them), cut to its first meaningful line ("[…]"
    says so), or "no reason recorded"."""
    line, cut = first_line(text)
    if not line:
        return "no reason recorded"
    return f"“{line}”" + (" […]" if cut else "")


# A step that did not run: (quoted reason, benchmark, mode, what happened where). Steps that
# share all but the mode are named together: "Docker bridge and Docker host network on the
# datacenter path (tcp) failed in 1 of 5 runs".
Step = tuple[str, str, str, str]


def _steps_not_ok(inputs: Inputs, numbers: Numbers, benchmarks: list[str]) -> list[Step]:
    """Every skipped or failed (benchmark, mode, path, variants), with its recorded reason."""
    steps = []
    for b in benchmarks:
        runs = inputs.raw_table(b, "runs")
        if runs is None:
            continue
        bad = runs[runs["status"] != "ok"].copy()
        if bad.empty:
            continue
        bad["why"] = bad["reason"].map(_reason)
        groups = bad.groupby(["status", "mode", "path", "why"], sort=False)
        for (status, mode, path, why), rows in groups:
            variants = ", ".join(sorted(set(rows["variant"].dropna())))
            key = f"limitations.{b}.{status}.{mode}.{path}.{variants.replace(', ', '+')}"
            n = numbers.add(f"{key}.runs", rows["run"].nunique(), "runs", inputs.raw / b)
            # the runs this cell was scheduled in: a precision-planned campaign gives cells
            # different run counts, and a skipped mode is never planned beyond the pilot
            cell = runs[(runs["mode"] == mode) & (runs["path"] == path)]
            if rows["variant"].notna().any():
                cell = cell[cell["variant"].isin(set(rows["variant"].dropna()))]
            n_total = cell["run"].nunique()
            total = numbers.add(f"{key}.runs_planned", n_total, "runs", inputs.raw / b)
            what = f"{on_path(path)} ({variants}) {status} in {n.text()} of {total.text()} runs"
            steps.append((why, b, mode, what))
    return steps


def _summary_steps_not_ok(inputs: Inputs, raw_benchmarks: list[str]) -> list[Step]:
    """Skipped cells of summaries whose raw data is not at hand (the reason kept there)."""
    steps = []
    for b in ("throughput", "latency", "http"):
        found = inputs.summary(b, f"{b}_summary")
        if found is None or b in raw_benchmarks:
            continue
        bad = found[0][found[0]["status"] != "ok"]
        for r in bad.drop_duplicates(["mode", "path", "reason"]).itertuples():
            steps.append((_reason(r.reason), b, r.mode, f"{on_path(r.path)} {r.status}"))
    return steps


def not_ok(inputs: Inputs, numbers: Numbers, benchmarks: list[str]) -> list[str]:
    """One row per distinct reason, with its id, naming every step it stopped: a daemon error
    that stopped three modes is quoted once, not three times. The ids are kept in
    ``inputs.reason_ids`` (the recorded text -> id), so the appendix's tables point to a row
    instead of repeating its reason."""
    steps = _steps_not_ok(inputs, numbers, benchmarks) + _summary_steps_not_ok(inputs, benchmarks)
    by_reason: dict[str, dict[tuple[str, str], list[str]]] = {}
    for why, b, mode, what in steps:
        by_reason.setdefault(why, {}).setdefault((b, what), []).append(mode)
    ids = {why: f"R{i}" for i, why in enumerate(by_reason, start=1)}
    for text in _recorded_reasons(inputs, benchmarks):
        if _reason(text) in ids:
            inputs.reason_ids[text] = ids[_reason(text)]
    lines = []
    for why, groups in by_reason.items():
        said = []
        for (b, what), modes in groups.items():
            named = [f"{label(m)} (`{m}`)" for m in modes]
            named = named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]
            said.append(f"`{b}` {named} {what}")
        cells = [ids[why], why.replace("|", "\\|"), "; ".join(said).replace("|", "\\|")]
        lines.append("| " + " | ".join(cells) + " |")
    if not lines:
        return []
    return ["| Id | Reason, as recorded | Steps it stopped |", "| :--- | :--- | :--- |", *lines]


def _recorded_reasons(inputs: Inputs, benchmarks: list[str]) -> set[str]:
    """Every reason a runs table or a summary records, without its status prefix."""
    texts: set[str] = set()
    for b in benchmarks:
        runs = inputs.raw_table(b, "runs")
        if runs is not None:
            texts |= set(runs.loc[runs["status"] != "ok", "reason"].dropna().astype(str))
    for b in ("throughput", "latency", "http"):
        found = inputs.summary(b, f"{b}_summary")
        if found is not None and "reason" in found[0].columns:
            bad = found[0][found[0]["status"] != "ok"]
            texts |= set(bad["reason"].dropna().astype(str))
    return {_STATUS.sub("", t).strip() for t in texts if _STATUS.sub("", t).strip()}


def limitations(
    inputs: Inputs,
    numbers: Numbers,
    benchmarks: list[str],
    not_measured: list[Section],
    profile: str | None = None,
    leaves_out: Sequence[str] = (),
) -> str:
    """The Limitations section: what the profile leaves out, what did not run and why, what
    was not measured."""
    blocks = ["## Limitations"]
    said = [s.strip() for s in leaves_out if s.strip()]
    if said:
        blocks.append(
            f"This run used the **{profile or 'chosen'}** profile "
            f"(`conf/profiles/{profile}.yaml`), which measures less than the study:\n\n"
            + "\n".join(f"- {s}" for s in said)
        )
    skipped = not_ok(inputs, numbers, benchmarks)
    blocks.append(
        "Modes that did not run: each reason the campaigns recorded, quoted once with the steps "
        "it stopped (the tables' notes give its id):\n\n"
        + ("\n".join(skipped) if skipped else "none: every planned mode ran.")
    )
    if not_measured:
        said = "Not measured in this campaign: "
        rows = [f"| {s.title} | {missing_text(s, inputs, numbers).removeprefix(said)} |"
                for s in not_measured]  # fmt: skip
        blocks.append(
            "Not measured or not analysed in this campaign:\n\n| Section | Why |\n"
            "| :--- | :--- |\n" + "\n".join(rows)
        )
    found = inputs.summary("throughput", "throughput_summary")
    if found is not None and "median_ci_reached" in found[0].columns:
        s = found[0][found[0]["status"] == "ok"]
        short = s[~s["median_ci_reached"].astype(bool)]
        if len(short):
            c = numbers.add(
                "limitations.throughput.median_coverage_pct",
                100 * short["median_coverage"].min(),
                "%",
                found[1],
            )
            blocks.append(
                f"With this few runs a distribution-free interval of a median cannot reach the "
                f"stated level: the throughput intervals span all runs and cover as little as "
                f"{c.text()}% (the tables give each cell's coverage)."
            )
    return "\n\n".join(blocks)
