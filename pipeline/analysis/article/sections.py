"""The results: one section per benchmark, from its processed summary, table(s) and figure(s).

``SECTIONS`` is the registry, keyed by benchmark name, in reading order: a new benchmark's
section is one entry. The host benchmarks (cpu, memory, disk, syscall) share ``host_section``,
which reads the summary ``pipeline.analysis.host`` writes. A benchmark found in the data without
an entry gets ``generic_section``: its comparisons with native if its summary has any, its
figures and its tables.

A section with nothing measured, drawn or tabled is left out of the body: Limitations names it
and the stage that would produce it. What would repeat with only its numbers changed (a sentence
per path, test or engine) is a compact table.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from pipeline.analysis import coldstart as coldstart_analysis
from pipeline.analysis import footprint as footprint_analysis
from pipeline.analysis import lb as lb_analysis
from pipeline.analysis.article.comparisons import MEASURES, Comparison, comparisons
from pipeline.analysis.article.inputs import (
    BASELINE,
    RANK,
    RATIO_T,
    RUN_T,
    SHIFT_T,
    WELCH_T,
    Inputs,
    col,
    figure_blocks,
    include,
    label,
    missing,
    on_path,
    ordered,
    path_label,
    rel,
    tables_for,
)
from pipeline.analysis.article.numbers import Numbers
from pipeline.benchmarks import BENCHMARKS

Prose = Callable[[Inputs, Numbers], "list[str] | None"]


@dataclass
class Section:
    key: str
    title: str
    raw: str | None  # the raw benchmark directory its data comes from
    tables: list[str]
    figures: str | None
    collect: str | None  # the stage that collects it, None when none exists yet
    analyse: str | None  # the stage that summarises it, None when none exists yet
    prose: Prose | None = None
    # other raw, processed or figure directories its prose reads (footprint reads density)
    claims: list[str] = field(default_factory=list)

    @property
    def names(self) -> set[str]:
        return {n for n in (self.key, self.raw, self.figures, *self.claims) if n}


def _no_verdict(summary: pd.DataFrame, columns: list[str], stage: str) -> list[str]:
    """The sentence for a summary without verdicts (it predates the verdict rule), or none."""
    if any(c in summary.columns and summary[c].notna().any() for c in columns):
        return []
    return [
        f"This summary has no verdict columns (it predates the verdict rule): re-run `{stage}` "
        "for verdicts against the margin."
    ]


def grid(head: list[str], rows: list[list[str]]) -> str:
    """A compact Markdown table: what would be one sentence per row with only its numbers
    changed."""
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join([":---"] * len(head)) + " |"]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def _throughput(inputs: Inputs, numbers: Numbers) -> list[str] | None:
    found = inputs.summary("throughput", "throughput_summary")
    if found is None:
        return None
    summary, source = found
    conf = col(summary.iloc[0], "confidence") if len(summary) else None
    rows = []
    multi_env = summary["environment"].nunique() > 1
    for env, frame in summary.groupby("environment", sort=True):
        for path in ordered(frame):
            cells = frame[frame["path"] == path]
            ok = cells[cells["status"] == "ok"]
            base = ok[ok["mode"] == BASELINE]
            if base.empty:
                continue
            b = base.iloc[0]
            key = f"throughput.{env}.{path}"
            nat = numbers.add(
                f"{key}.native.median_gbps", b["median_gbps"], "Gbit/s", source,
                b["median_lo_gbps"], b["median_hi_gbps"], col(b, "median_coverage"), RANK,
            )  # fmt: skip
            runs = numbers.add(f"{key}.native.n_runs", b["n_runs"], "runs", source)
            others = ok[(ok["mode"] != BASELINE) & ok["ratio"].notna()]
            ratios = {}
            for r in others.itertuples():
                ratios[r.mode] = numbers.add(
                    f"{key}.{r.mode}.pct_of_native", 100 * r.ratio, "% of native", source,
                    100 * r.ratio_lo, 100 * r.ratio_hi, conf, RATIO_T,
                )  # fmt: skip
            ends = ["", ""]
            if ratios:
                lowest = min(ratios, key=lambda m: ratios[m].value)
                highest = max(ratios, key=lambda m: ratios[m].value)
                ends = [f"{label(m)} {ratios[m].with_ci('%')}" for m in (lowest, highest)]
                if lowest == highest:
                    ends[1] = "(one mode)"
            where = f"`{env}`, {path_label(path)}" if multi_env else path_label(path)
            rows.append([where, f"{nat.with_ci(' Gbit/s')} ({runs.text()} runs)", *ends])
    paragraphs = []
    if rows:
        paragraphs.append(
            "TCP throughput: native's median across runs, and the container modes furthest "
            "from and closest to it, as % of native:\n\n"
            + grid(["Path", "Native", "Lowest", "Highest"], rows)
        )
    paragraphs += _udp(inputs, numbers)
    return paragraphs + _no_verdict(summary, ["verdict"], "summarise-throughput")


def _host(benchmark: str, stage: str, what: str) -> Callable:
    """Prose for a host benchmark summarised by pipeline.analysis.host (cpu, memory, disk): per
    test, native's median with its interval and each mode's ratio to native."""

    def prose(inputs: Inputs, numbers: Numbers) -> list[str] | None:
        found = inputs.summary(benchmark, f"{benchmark}_summary")
        if found is None:
            return None
        summary, source = found
        conf = col(summary.iloc[0], "confidence") if len(summary) else None
        rows = []
        for (env, variant, metric), cells in summary.groupby(
            ["environment", "variant", "metric"], sort=False
        ):
            ok = cells[cells["status"] == "ok"]
            base = ok[ok["mode"] == BASELINE]
            if base.empty:
                continue
            b = base.iloc[0]
            key = f"{benchmark}.{env}.{variant}.{metric}"
            nat = numbers.add(
                f"{key}.native.median", b["median"], b["unit"], source, b["median_lo"],
                b["median_hi"], col(b, "median_coverage"), RANK,
            )  # fmt: skip
            runs = numbers.add(f"{key}.native.n_runs", b["n_runs"], "runs", source)
            better = "rate" if b["higher_is_better"] else "time"
            others = ok[(ok["mode"] != BASELINE) & ok["ratio"].notna()]
            parts = []
            for r in others.itertuples():
                ratio = numbers.add(
                    f"{key}.{r.mode}.pct_of_native", 100 * r.ratio, "% of native", source,
                    100 * r.ratio_lo, 100 * r.ratio_hi, conf, RATIO_T,
                )  # fmt: skip
                parts.append(f"{label(r.mode)} {ratio.with_ci('%')}")
            where = f"`{env}`: " if summary["environment"].nunique() > 1 else ""
            rows.append([f"{where}`{variant}` (`{metric}`, a {better})",
                         f"{nat.with_ci(' ' + b['unit'])} ({runs.text()} runs)",
                         "; ".join(parts)])  # fmt: skip
        paragraphs = []
        if rows:
            paragraphs.append(
                f"{what}: native's median across runs per test, and each container mode's "
                "rate or time as % of native's:\n\n"
                + grid(["Test", "Native", "Container modes, % of native"], rows)
            )
        return paragraphs + _no_verdict(summary, ["verdict"], stage)

    return prose


def _udp(inputs: Inputs, numbers: Numbers) -> list[str]:
    found = inputs.summary("throughput", "throughput_udp_summary")
    if found is None:
        return []
    summary, source = found
    rows = []
    for (env, path), cells in summary.groupby(["environment", "path"], sort=True):
        ok = cells[(cells["status"] == "ok") & cells["ratio"].notna() & (cells["mode"] != BASELINE)]
        if ok.empty:
            continue
        key = f"throughput_udp.{env}.{path}"
        worst = ok.loc[ok["ratio"].idxmin()]
        lossy = ok.loc[ok["loss_pct"].idxmax()]
        w = numbers.add(
            f"{key}.{worst['mode']}.pct_of_native", 100 * worst["ratio"], "% of native", source,
            100 * worst["ratio_lo"], 100 * worst["ratio_hi"], col(worst, "confidence"), RATIO_T,
        )  # fmt: skip
        loss = numbers.add(
            f"{key}.{lossy['mode']}.loss_pct", lossy["loss_pct"], "%", source,
            lossy["loss_pct_lo"], lossy["loss_pct_hi"], col(lossy, "loss_pct_coverage"), RANK,
        )  # fmt: skip
        where = f"`{env}`, {path_label(path)}" if summary["environment"].nunique() > 1 \
            else path_label(path)  # fmt: skip
        rows.append([where, f"{label(worst['mode'])} {w.with_ci('%')}",
                     f"{label(lossy['mode'])} {loss.with_ci('%')}"])  # fmt: skip
    if not rows:
        return []
    return [
        "UDP at a fixed offered rate: the lowest received throughput (% of native's) and the "
        "highest median loss:\n\n" + grid(["Path", "Lowest received", "Highest loss"], rows)
    ]


def _percentiles(benchmark: str, stage: str, what: str) -> Callable:
    def prose(inputs: Inputs, numbers: Numbers) -> list[str] | None:
        found = inputs.summary(benchmark, f"{benchmark}_summary")
        if found is None:
            return None
        summary, source = found
        rows = []
        several = summary["environment"].nunique() > 1
        for (env, variant), frame in summary.groupby(["environment", "variant"], sort=True):
            for path in ordered(frame):
                cells = frame[(frame["path"] == path) & (frame["status"] == "ok")]
                base = cells[cells["mode"] == BASELINE]
                if base.empty:
                    continue
                b = base.iloc[0]
                conf = col(b, "confidence")
                key = f"{benchmark}.{env}.{path}.{variant}"
                p50 = numbers.add(
                    f"{key}.native.p50_us", b["p50_us"], "us", source, b["p50_lo_us"],
                    b["p50_hi_us"], conf, RUN_T,
                )  # fmt: skip
                p99 = "n/a"
                if not missing(b["p99_us"]):
                    p99 = numbers.add(
                        f"{key}.native.p99_us", b["p99_us"], "us", source, b["p99_lo_us"],
                        b["p99_hi_us"], conf, RUN_T,
                    ).with_ci(" us")  # fmt: skip
                largest = ""
                others = cells[(cells["mode"] != BASELINE) & cells["d_p50_us"].notna()]
                if not others.empty:
                    worst = others.loc[others["d_p50_us"].idxmax()]
                    d = numbers.add(
                        f"{key}.{worst['mode']}.d_p50_us", worst["d_p50_us"], "us", source,
                        worst["d_p50_lo_us"], worst["d_p50_hi_us"], conf, SHIFT_T,
                    )  # fmt: skip
                    largest = f"{label(worst['mode'])} {d.with_ci(' us', signed=True)}"
                where = f"`{env}`, {path_label(path)}" if several else path_label(path)
                rows.append([f"`{variant}`", where, p50.with_ci(" us"), p99, largest])
        if not rows:
            return []
        return [
            f"{what}: native's p50 and p99 (geometric mean of the runs' own percentiles) and "
            "the container mode with the largest p50 difference to native:\n\n"
            + grid(["Variant", "Path", "Native p50", "Native p99", "Largest p50 difference"],
                   rows)  # fmt: skip
        ] + _no_verdict(summary, ["verdict_p50"], stage)

    return prose


def _internet(inputs: Inputs, numbers: Numbers) -> list[str] | None:
    """Measured when the decomposition exists. Its generated answer
    (``internet_vs_dc_answer.md``: which is larger on each path, the mode differences or the
    run-to-run variation) is the section's table, included here; the full decomposition goes
    to the appendix."""
    if inputs.summary("internet_vs_dc", "internet_vs_dc_components") is None:
        return None
    path = inputs.tables / "internet_vs_dc_answer.md"
    if not path.exists():
        return []
    inputs.used_tables.add(path.name)
    return [include(path.read_text(encoding="utf-8").strip(), rel(inputs, path))]


PUBLISHED = Path("data") / "reference" / "published.csv"  # under the repository root


def _against(inputs: Inputs, numbers: Numbers) -> list[str] | None:
    """The five articles' headline claims confronted with this study, by
    ``against.against_the_articles``, once the replication stage has run (its table exists).
    The frame it reads is the one that stage builds from the same inputs (the published
    claims and the processed summaries), rebuilt here: replication is deterministic, and the
    table keeps only its display columns. Its numbers are the replication's own, so the
    paragraph is included as generated text."""
    table = inputs.tables / "replication.csv"
    published = inputs.root / PUBLISHED
    if not table.exists() or not published.exists():
        return None
    from pipeline.analysis import replication
    from pipeline.analysis.article.against import against_the_articles

    frame = replication.replicate(
        replication.load_published(published),
        replication.load_study(inputs.processed),
        confidence=inputs.confidence,
    )
    text = against_the_articles(frame) if len(frame) else ""
    if not text:
        return ["No published claim could be confronted with this study's data."]
    source = f"{rel(inputs, published)} against {rel(inputs, inputs.processed)}, by " \
        "pipeline.analysis.article.against"  # fmt: skip
    return [include(text, source)]


def _lb(inputs: Inputs, numbers: Numbers) -> list[str] | None:
    """Per environment and orchestrator (Swarm's mode first): the direct replica's rate, then
    each balancer's rate as a share of it (paired t interval) at every replica count measured
    (pipeline.analysis.lb), in one sentence and one table however many orchestrators ran.
    Swarm's numbers are ``lb.<env>.*``, another mode's ``lb.<env>.<mode>.*``."""
    found = inputs.summary("lb", "lb_summary")
    if found is None:
        return None
    summary, source = found
    modes = sorted(set(summary["mode"]), key=lambda m: (m != lb_analysis.SWARM_MODE, m))
    several_envs = summary["environment"].nunique() > 1
    directs, rows, counts = [], [], []
    for env, mode in sorted(
        set(zip(summary["environment"], summary["mode"], strict=True)),
        key=lambda em: (em[0], modes.index(em[1])),
    ):
        cells = summary[(summary["environment"] == env) & (summary["mode"] == mode)]
        ok = cells[cells["status"] == "ok"]
        base = ok[ok["variant"] == "direct-r1"]
        if base.empty:
            continue
        b = base.iloc[0]
        key = f"lb.{env}" if mode == lb_analysis.SWARM_MODE else f"lb.{env}.{mode}"
        who = lb_analysis.orchestrator(mode) + (f" (`{env}`)" if several_envs else "")
        rate = numbers.add(
            f"{key}.direct-r1.rps", b["rps"], "req/s", source, b["rps_lo"], b["rps_hi"],
            col(b, "rps_coverage"),
            "distribution-free order-statistic interval of the median across runs",
        )  # fmt: skip
        runs = numbers.add(f"{key}.direct-r1.n_runs", b["n_runs"], "runs", source)
        directs.append((who, rate, runs))
        for _, group in ok[ok["variant"] != "direct-r1"].groupby("balancer", sort=False):
            shares = {}
            for r in group.sort_values("replicas").itertuples():
                if missing(r.ratio):
                    continue
                n = numbers.add(f"{key}.{r.variant}.replicas", r.replicas, "replicas", source)
                pct = numbers.add(
                    f"{key}.{r.variant}.pct_of_direct", 100 * r.ratio, "% of direct", source,
                    100 * r.ratio_lo, 100 * r.ratio_hi, col(r._asdict(), "confidence"),
                    RATIO_T,
                )  # fmt: skip
                verdict = getattr(r, "verdict", None)
                said = f", {verdict}" if isinstance(verdict, str) and verdict else ""
                shares[n.text()] = f"{pct.with_ci('%')}{said}"
                counts += [n.text()] if n.text() not in counts else []
            if shares:
                rows.append((who, group["configuration"].iloc[0], shares))
    if not directs:
        return []
    if len(directs) == 1:
        who, rate, runs = directs[0]
        solo_swarm = modes == [lb_analysis.SWARM_MODE]
        text = (f"{'' if solo_swarm else who + ': '}One replica dialled directly served "
                f"{rate.with_ci(' req/s')} (median of {runs.text()} runs, wrk closed loop).")
    else:
        served = [f"{rate.with_ci(' req/s')} on {who} ({runs.text()} runs)"
                  for who, rate, runs in directs]  # fmt: skip
        text = (f"One replica dialled directly served {', '.join(served[:-1])} and "
                f"{served[-1]} (medians across runs, wrk closed loop).")  # fmt: skip
    if rows:
        own = "that one replica's" if len(directs) == 1 else "its own direct replica's"
        head = ["Balancer", *(f"{n} replicas" if n != "1" else "1 replica" for n in counts)]
        body = [[name, *(shares.get(n, "") for n in counts)] for _, name, shares in rows]
        if len(directs) > 1:
            head, body = ["Orchestrator", *head], [[who, *row] for (who, _, _), row
                                                   in zip(rows, body, strict=True)]  # fmt: skip
        text += (
            f" Each balancer's rate as % of {own}, by the replicas behind it (verdicts: no "
            "margin was fixed for a balancer, so overhead, faster or inconclusive):\n\n"
            + grid(head, body)
        )
    return [text]


def _coldstart(inputs: Inputs, numbers: Numbers) -> list[str] | None:
    """Per environment: native's and each engine's pooled p50 with its interval, and each
    rootless engine's "+%" against its rootful engine (pipeline.analysis.coldstart)."""
    found = inputs.summary("coldstart", "coldstart_summary")
    if found is None:
        return None
    summary, source = found
    kind = RUN_T
    paragraphs = []
    for env, cells in summary.groupby("environment", sort=True):
        ok = cells[(cells["status"] == "ok") & (cells["n_runs"] > 0)]
        if ok.empty:
            continue
        key = f"coldstart.{env}"
        rows, rootless = [], []
        for r in ok.itertuples():
            d = r._asdict()
            conf = col(d, "confidence")
            p50 = numbers.add(
                f"{key}.{r.mode}.p50_ms", 1000 * r.p50_s, "ms", source, 1000 * r.p50_lo_s,
                1000 * r.p50_hi_s, conf, kind,
            )  # fmt: skip
            p99 = "n/a"
            if not missing(r.p99_s):
                p99 = numbers.add(
                    f"{key}.{r.mode}.p99_ms", 1000 * r.p99_s, "ms", source, 1000 * r.p99_lo_s,
                    1000 * r.p99_hi_s, conf, kind,
                ).with_ci(" ms")  # fmt: skip
            said = coldstart_analysis.SAID.get(d.get("verdict_p50"), "") if r.mode != "native" \
                else "baseline"  # fmt: skip
            rows.append([label(r.mode), p50.with_ci(" ms"), p99, said])
            if isinstance(r.rootful_mode, str) and r.rootful_mode and r.rootful_n_runs:
                plus = numbers.add(
                    f"{key}.{r.mode}.p50_plus_pct_vs_rootful", r.rootful_plus_pct_p50, "%",
                    source, r.rootful_plus_pct_p50_lo, r.rootful_plus_pct_p50_hi, conf,
                    SHIFT_T,
                )  # fmt: skip
                rootless.append(
                    f"{label(r.mode)} against {label(r.rootful_mode)}: "
                    f"{plus.with_ci('%', signed=True)} at p50, "
                    f"{coldstart_analysis.SAID.get(d.get('rootful_verdict_p50'), 'inconclusive')}"
                )
        text = (
            "Time from the run command to nginx answering through the published port, and the "
            "p50's verdict against native:\n\n"
            + grid(["Mode", "p50", "p99", "Against native"], rows)
        )
        if rootless:
            text += "\n\nRootless against rootful: " + "; ".join(rootless) + "."
        paragraphs.append(text)
    return paragraphs


_FIT = "OLS over every reading, standard errors clustered by run, t with runs - 1 df"


def _footprint(inputs: Inputs, numbers: Numbers) -> list[str] | None:
    """Per environment and engine: the idle engine and the cost of one more idle container
    (PSS, run-clustered regression), the total predicted at the articles' count, the ratio to
    rootful Docker's cost; then how far density got (pipeline.analysis.footprint)."""
    found = inputs.summary("footprint", "footprint_summary")
    if found is None:
        return None
    summary, source = found
    paragraphs = []
    for env, cells in summary.groupby("environment", sort=True):
        ok = cells[(cells["status"] == "ok") & cells["pss_per_container_kib"].notna()]
        rows, heads, beyond = [], set(), set()
        for r in ok.itertuples():
            d, key = r._asdict(), f"footprint.{env}.{r.mode}"
            conf = col(d, "confidence")
            idle = numbers.add(
                f"{key}.pss_idle_mib", r.pss_idle_kib / 1024, "MiB", source,
                r.pss_idle_lo_kib / 1024, r.pss_idle_hi_kib / 1024, conf, _FIT, decimals=1,
            )  # fmt: skip
            per = numbers.add(
                f"{key}.pss_per_container_mib", r.pss_per_container_kib / 1024, "MiB/container",
                source, r.pss_per_container_lo_kib / 1024, r.pss_per_container_hi_kib / 1024,
                conf, _FIT, decimals=2,
            )  # fmt: skip
            at = numbers.add(f"{key}.predict_at", r.at, "containers", source)
            total = numbers.add(
                f"{key}.pss_at_mib", r.pss_at_kib / 1024, "MiB", source, r.pss_at_lo_kib / 1024,
                r.pss_at_hi_kib / 1024, conf, _FIT, decimals=0,
            )  # fmt: skip
            if r.max_count < r.at:
                top = numbers.add(f"{key}.max_count", r.max_count, "containers", source)
                beyond.add(top.text())
            against = "reference" if r.mode == "docker-bridge" else ""
            if r.mode != "docker-bridge" and not missing(r.ratio_lo):
                ratio = numbers.add(
                    f"{key}.per_container_vs_rootful_docker", r.ratio, "ratio", source,
                    r.ratio_lo, r.ratio_hi, conf,
                    RATIO_T, decimals=2,
                )  # fmt: skip
                against = ratio.with_ci("x")
                verdict = getattr(r, "verdict", None)
                if isinstance(verdict, str) and verdict:
                    against += f", {footprint_analysis.SAID.get(verdict, verdict)}"
            rows.append([label(r.mode), idle.with_ci(" MiB"), per.with_ci(" MiB"),
                         total.with_ci(" MiB"), against])  # fmt: skip
            heads.add(at.text())
        if rows:
            at_head = f"At {' or '.join(sorted(heads))} containers"
            text = (
                "The engines' own processes (total PSS, the containers' workloads excluded), "
                "from a line fitted to every reading, and each engine's cost per container "
                "against rootful Docker's:\n\n"
                + grid(["Engine", "Idle", "Per idle container", at_head,
                        "Per container vs rootful Docker"], rows)  # fmt: skip
            )
            if beyond:
                text += (f"\n\nThe \"{at_head.lower()}\" column extends the line beyond the "
                         f"{' or '.join(sorted(beyond))} containers measured.")  # fmt: skip
            paragraphs.append(text)
    return paragraphs + _density(inputs, numbers)


def _density(inputs: Inputs, numbers: Numbers) -> list[str]:
    """How many idle containers each engine reached and how the host's available memory
    (MemAvailable) moved per container: negative is memory taken, and an interval that reaches
    0 or above resolves no cost against the page cache's own movements."""
    found = inputs.summary("footprint", "density_summary")
    if found is None:
        return []
    summary, source = found
    paragraphs = []
    for env, cells in summary.groupby("environment", sort=True):
        rows, caps = [], set()
        for r in cells[(cells["status"] == "ok") & (cells["n_runs"] > 0)].itertuples():
            d, key = r._asdict(), f"density.{env}.{r.mode}"
            conf = col(d, "confidence")
            reached = numbers.add(
                f"{key}.reached", r.reached_median, "containers", source, r.reached_lo,
                r.reached_hi, col(d, "reached_coverage"), RANK, decimals=0,
            )  # fmt: skip
            # the summary holds the drop; the article writes the change, signed
            mem = numbers.add(
                f"{key}.host_memavailable_change_mib_per_container", -r.mem_per_container_mib,
                "MiB/container", source, -r.mem_per_container_hi_mib,
                -r.mem_per_container_lo_mib, conf, RANK, decimals=2,
            )  # fmt: skip
            reached_text = reached.with_ci()
            if r.capped and not missing(r.cap):
                cap = numbers.add(f"{key}.cap", r.cap, "containers", source, decimals=0)
                caps.add(cap.text())
                reached_text += " (the cap, every run)"
            cost = "no cost resolved" if mem.hi is None or mem.hi >= 0 else "memory taken"
            rows.append([label(r.mode), reached_text,
                         f"{mem.with_ci(' MiB', signed=True)}, {cost}"])  # fmt: skip
        if rows:
            capped = (f" (a cap of {' or '.join(sorted(caps))} is the profile's, not a limit of "
                      "the engine)") if caps else ""  # fmt: skip
            paragraphs.append(
                f"Density{capped}: idle containers reached, and the change of the host's "
                "available memory per container (negative: memory taken):\n\n"
                + grid(["Engine", "Containers reached", "MemAvailable per container"], rows)
            )
    return paragraphs


def _orchestration(inputs: Inputs, numbers: Numbers) -> list[str] | None:
    """Per environment: the median seconds of each Swarm operation with its interval and the
    replicas it reached (pipeline.analysis.orchestration)."""
    found = inputs.summary("orchestration", "orchestration_summary")
    if found is None:
        return None
    summary, source = found
    paragraphs = []
    for env, cells in summary.groupby("environment", sort=False):
        # operations that reached the same replicas (a cap makes "scale to 10" and "scale to
        # 50" the same step) are one clause with each measurement
        said: dict[str, list[str]] = {}
        for r in cells[(cells["status"] == "ok") & (cells["n_runs"] > 0)].itertuples():
            d, key = r._asdict(), f"orchestration.{env}.{r.variant}"
            seconds = numbers.add(
                f"{key}.median_s", r.median_s, "s", source, r.median_lo_s, r.median_hi_s,
                col(d, "median_coverage"), RANK,
            )  # fmt: skip
            runs = numbers.add(f"{key}.n_runs", r.n_runs, "runs", source)
            what = {"create": "creating a service", "update": "a rolling update of"}.get(
                r.variant.split("-")[0], "scaling from one replica to"
            )
            if r.variant != "create":
                n = numbers.add(f"{key}.replicas", int(str(r.replicas).split(",")[-1]),
                                "replicas", source)  # fmt: skip
                what += f" {n.text()} replicas"
                if r.capped:
                    what += " (the profile's cap)"
            said.setdefault(what, []).append(f"{seconds.with_ci(' s')} ({runs.text()} runs)")
        parts = [f"{what} {' and '.join(values)}" for what, values in said.items()]
        if parts:
            paragraphs.append(
                "Until every replica accepted TCP connections, Docker Swarm took: "
                + "; ".join(parts)
                + "."
            )
    return paragraphs


def _spectrum(inputs: Inputs, numbers: Numbers) -> list[str] | None:
    """Per mode of the isolation spectrum, in its order (pipeline.analysis.spectrum): where it
    was measured, its verdicts and its furthest point from native on the figure (the one ratio
    or p50 of each panel); then the spectrum's modes that were not measured."""
    found = inputs.summary("spectrum", "spectrum")
    if found is None:
        return None
    table, source = found
    shown = table[table["statistic"].isna() | (table["statistic"] == "p50")]
    if shown.empty:
        return ["No benchmark measured a mode of the isolation spectrum in this campaign."]
    rows = []
    several = table["environment"].nunique() > 1
    for _, part in shown.groupby("rank", sort=True):
        first = part.iloc[0]
        vm = first["isolation"] == "VM"
        name = first["environment"] if vm else f"{first['environment']}.{first['mode']}"
        key = f"spectrum.{'vm.' if vm else ''}{name}"
        n = numbers.add(f"{key}.comparisons", len(part), "comparisons", source)
        benchmarks = numbers.add(f"{key}.benchmarks", part["benchmark"].nunique(), "benchmarks",
                                 source)  # fmt: skip
        sizes = (part["ratio"].astype(float).map(lambda r: abs(math.log(r)) if r > 0
                                                 else math.inf))  # fmt: skip
        far = part.loc[sizes.idxmax()]
        pct = numbers.add(
            f"{key}.furthest.{far['benchmark']}.{far['path']}.{far['metric']}.pct_of_native",
            100 * far["ratio"], "% of native", source, 100 * far["lo"], 100 * far["hi"],
            col(far, "confidence"), RATIO_T if not vm else WELCH_T,
        )  # fmt: skip
        counts = []
        for verdict, k in part["verdict"].dropna().value_counts().items():
            slug = str(verdict).replace(" ", "_")
            counts.append(f"{numbers.add(f'{key}.n_{slug}', int(k), 'comparisons', source).text()}"
                          f" {verdict}")  # fmt: skip
        if vm:
            what = (f"VM (`{first['environment']}`'s native against "
                    f"`{first['reference']}`'s)")  # fmt: skip
        else:
            where = f", in `{first['environment']}`" if several else ""
            what = (f"{label(first['mode'])} (`{first['mode']}`; {first['isolation']}, "
                    f"{first['privilege']}{where})")  # fmt: skip
        measure = MEASURES.get(far["benchmark"], far["benchmark"])
        stat = f" {far['statistic']}" if isinstance(far["statistic"], str) else ""
        rows.append([what, f"{n.text()} in {benchmarks.text()}", ", ".join(counts) or "none",
                     f"{measure}{stat} (`{far['variant']}`) {on_path(far['path'])}: "
                     f"{pct.with_ci('%')} of native"])  # fmt: skip
    paragraphs = [
        "Each mode of the isolation spectrum against native, from native to the VM, over the "
        "figure's panels (each benchmark's one ratio, or its p50), and its furthest point from "
        "native:\n\n"
        + grid(["Mode (runtime, privilege)", "Comparisons in benchmarks", "Verdicts",
                "Furthest from native"], rows)  # fmt: skip
    ]
    missing = inputs.summary("spectrum", "spectrum_not_measured")
    if missing is not None:
        frame, _ = missing
        drawn = set(table["mode"].where(table["isolation"] != "VM", "VM"))
        absent = [m for m in dict.fromkeys(frame["mode"]) if m not in drawn]
        if absent:
            names = [f"{label(m)} (`{m}`)" if m != "VM" else "the VM (one environment: a second, "
                     "a VM's inventory, adds it)" for m in absent]  # fmt: skip
            paragraphs.append("Not measured in this campaign: " + "; ".join(names) + ".")
    return paragraphs


def section(
    key: str,
    title: str,
    prose: Prose | None,
    tables: list[str] | None = None,
    raw: str | None = "",
    figures: str | None = "",
    collect: str | None = "",
    analyse: str | None = "",
    claims: list[str] | None = None,
) -> Section:
    """A section whose raw directory, table, figure directory and stages are named after the
    benchmark (``collect-<key>``, ``summarise-<key>``) unless given."""
    return Section(
        key,
        title,
        key if raw == "" else raw,
        [key] if tables is None else tables,
        key if figures == "" else figures,
        f"collect-{key}" if collect == "" else collect,
        f"summarise-{key}" if analyse == "" else analyse,
        prose,
        claims or [],
    )


def host_section(benchmark: str, title: str, what: str | None = None) -> Section:
    """A host benchmark summarised by ``pipeline.analysis.host``: its table
    ``reports/tables/<benchmark>.md``, its figures ``figures/<benchmark>/``."""
    stage = f"summarise-{benchmark}"
    return section(benchmark, title, _host(benchmark, stage, what or title))


SECTIONS: dict[str, Section] = {
    "throughput": section(
        "throughput", "Network throughput", _throughput, tables=["throughput", "throughput_udp"]
    ),
    "latency": section(
        "latency", "Latency", _percentiles("latency", "summarise-latency", "Round trip")
    ),
    "http": section("http", "HTTP", _percentiles("http", "summarise-http", "HTTP request latency")),
    "internet_vs_dc": section(
        "internet_vs_dc",
        "Internet vs datacenter",
        _internet,
        tables=["internet_vs_dc"],
        raw=None,
        collect="collect-latency",
        analyse="compare-internet-datacenter",
    ),
    # Named as pipeline.analysis.replication names these benchmarks.
    "lb": section("lb", "Load balancing", _lb),
    # every benchmark the host analysis summarises, under the title it declares
    **{name: host_section(name, cls.title) for name, cls in BENCHMARKS.items()
       if cls.analysis == "host"},
    "coldstart": section("coldstart", "Cold start and scaling", _coldstart),
    "footprint": section(
        "footprint",
        "Engine memory footprint and density",
        _footprint,
        tables=["footprint", "footprint_processes", "density"],
        claims=["density"],
    ),
    "orchestration": section("orchestration", "Swarm orchestration", _orchestration),
    "spectrum": section(
        "spectrum",
        "The isolation spectrum",
        _spectrum,
        raw=None,
        collect=None,
        analyse="compare-spectrum",
    ),
    "replication": section(
        "replication",
        "Against the articles",
        _against,
        raw=None,
        figures=None,
        collect=None,
        analyse="replicate-articles",
    ),
}
# What Methods reports, not a results section: no generic section is made for these.
METHOD_NAMES = {"instrument", "noise", "wan_calibration", "calibration"}


def generic_section(name: str) -> Section:
    """The section of a benchmark without an entry in ``SECTIONS``: its comparisons with native
    (the comparison frame its summary stage wrote, if it has any), figures and tables."""
    return section(name, name, _generic(name), tables=None)


def _generic(name: str) -> Prose:
    def prose(inputs: Inputs, numbers: Numbers) -> list[str] | None:
        path = inputs.processed / name / f"{name}_summary.parquet"
        found = [c for c in comparisons(inputs.processed) if c.section == name]
        if not found:
            has_files = (inputs.tables / f"{name}.md").exists() or (inputs.figures / name).is_dir()
            return [] if path.exists() or has_files else None
        lines = [f"Each container mode against native (`{rel(inputs, found[0].source)}`):", ""]
        for c in found:
            ratio = comparison_number(numbers, c, "")
            verdict = f", {c.verdict}" if c.verdict else ""
            lines.append(
                f"- {label(c.mode)} (`{c.mode}`) {on_path(c.path)}, {c.what}: "
                f"{ratio.with_ci('%')} of native{verdict}."
            )
        return ["\n".join(lines)]

    return prose


def comparison_number(numbers: Numbers, c: Comparison, prefix: str):
    """A comparison's ratio to native, as a percentage of native, registered."""
    key = ".".join(k for k in (prefix, c.benchmark, c.environment, c.path, c.key, c.mode) if k)
    return numbers.add(
        f"{key}.pct_of_native", 100 * c.ratio, "% of native", c.source,
        None if c.lo is None else 100 * c.lo, None if c.hi is None else 100 * c.hi,
        c.confidence, RATIO_T,
    )  # fmt: skip


def missing_text(section: Section, inputs: Inputs, numbers: Numbers) -> str:
    """What a section without a summary says: not measured, or collected but not analysed."""
    runs = inputs.raw_table(section.raw, "runs") if section.raw else None
    if runs is not None:
        ok = runs[runs["status"] == "ok"]
        where = inputs.raw / section.raw
        n = numbers.add(f"{section.key}.raw.ok_run_rows", len(ok), "run rows", where)
        analysed = (
            f"stage `{section.analyse}` summarises it"
            if section.analyse
            else "no analysis stage summarises it yet"
        )
        return (
            f"Collected ({n.text()} measured run rows under `{rel(inputs, where)}`) "
            f"but not analysed in this campaign: {analysed}."
        )
    if section.collect:
        stage = f"stage `{section.collect}` collects it"
        if section.analyse:
            stage += f" and `{section.analyse}` summarises it"
        else:
            stage += "; no analysis stage summarises it yet"
    elif section.analyse:
        stage = f"stage `{section.analyse}` produces it"
    else:
        stage = "no stage of the pipeline measures it yet"
    return f"Not measured in this campaign: {stage}."


def render(section: Section, inputs: Inputs, numbers: Numbers) -> tuple[str, bool]:
    """The section's Markdown (its sentences, figures and a pointer to its tables in the
    appendix) and whether it was measured. A section with nothing measured, drawn or tabled is
    "" here: Limitations names it and the stage that would produce it, once."""
    paragraphs = section.prose(inputs, numbers) if section.prose else None
    measured = paragraphs is not None
    shown = figure_blocks(inputs, numbers, section.figures) if section.figures else []
    shown += tables_for(inputs, section.tables, section.title)
    if not measured and not shown:
        return "", measured
    blocks = [f"## {section.title}", ""]
    blocks += paragraphs if measured else [missing_text(section, inputs, numbers)]
    return "\n\n".join(b for b in [*blocks, *shown] if b != ""), measured


def discovered(inputs: Inputs) -> list[str]:
    """Benchmarks in the data (raw, processed or figures) that no section or Methods covers."""
    claimed = set(METHOD_NAMES)
    for s in SECTIONS.values():
        claimed |= s.names
    names = set(inputs.raw_benchmarks())
    for base in (inputs.processed, inputs.figures):
        if base.is_dir():
            names |= {p.name for p in base.iterdir() if p.is_dir()}
    return sorted(n for n in names - claimed if not n.startswith("."))
