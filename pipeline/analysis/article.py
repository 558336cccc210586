"""The article assembled only from generated files: numbers.json, article.md, article.html.

Inputs are what the stages wrote: the processed summaries under ``<processed>/<benchmark>/``, the
``runs`` and ``hosts`` tables under ``<raw>/<benchmark>/<environment>/`` (plus ``campaign.json``,
the duty cycle, where the campaign recorded one), ``reports/tables/*`` and ``figures/<dir>/``.

No number is typed here. Every number the prose states is first registered in ``Numbers`` (key,
value, unit, interval, source file) and the prose is written from the registered, formatted
value, so ``numbers.json`` holds every number of the text. Tables, generated sentences and figure
captions are included verbatim between ``<!-- include: FILE -->`` and ``<!-- end include -->``
markers; identifiers copied from the data (kernel, versions, file names) are code spans.

A section whose data does not exist says so and names the stage that would produce it; the
limitations section lists every skipped or failed mode with its recorded reason and every
benchmark not collected.
"""

from __future__ import annotations

import base64
import html
import json
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from pipeline.analysis import coldstart as coldstart_analysis, figures, footprint as footprint_analysis, schema

PATH_LABELS = {
    "dc": "datacenter",
    "local": "localhost",
    "internet": "Internet",
    "host": "on the host",
}
PATH_ORDER = ["dc", "local", "internet", "host"]
BASELINE = "native"
INCLUDE_BEGIN = "<!-- include: {} -->"
INCLUDE_END = "<!-- end include -->"


# --- numbers ---------------------------------------------------------------------------------


def decimals_for(*values: float | None) -> int:
    """Digits after the point for a number whose value and interval ends are ``values``: about
    three significant digits of the largest (a count without interval has none)."""
    present = [abs(v) for v in values if v is not None]
    size = max(present)
    if len(present) == 1 and float(size).is_integer():
        return 0
    return 0 if size >= 1000 else 1 if size >= 10 else 2 if size >= 1 else 3


def format_number(value: float, decimals: int, signed: bool = False) -> str:
    """``1234.5, 0`` -> "1,235"; the sign is "-" for negatives and, with ``signed``, "+"."""
    text = f"{abs(value):,.{decimals}f}"
    if float(text.replace(",", "")) == 0:
        return text
    return ("-" if value < 0 else "+" if signed else "") + text


@dataclass
class Number:
    key: str
    value: float
    unit: str
    source: str
    decimals: int
    lo: float | None = None
    hi: float | None = None
    confidence: float | None = None
    interval: str | None = None  # what the interval is (e.g. "cluster bootstrap over runs")

    def text(self, signed: bool = False) -> str:
        return format_number(self.value, self.decimals, signed)

    def ci(self, signed: bool = False) -> str:
        """The interval as "[lo, hi]", or "" when the number has no interval."""
        if self.lo is None or self.hi is None:
            return ""
        lo = format_number(self.lo, self.decimals, signed)
        return f"[{lo}, {format_number(self.hi, self.decimals, signed)}]"

    def with_ci(self, unit: str = "", signed: bool = False) -> str:
        """Value, unit as the prose writes it, interval: "12.3 us [11.0, 13.1]"."""
        parts = [self.text(signed) + unit, self.ci(signed)]
        return " ".join(p for p in parts if p)

    def as_dict(self) -> dict:
        interval = None if self.lo is None or self.hi is None else [self.lo, self.hi]
        return {
            "value": self.value,
            "unit": self.unit,
            "interval": interval,
            "confidence": self.confidence,
            "interval_kind": self.interval,
            "decimals": self.decimals,
            "text": self.text(),
            "source": self.source,
        }


@dataclass
class Numbers:
    """Every number the article states, by stable key."""

    root: Path
    entries: dict[str, Number] = field(default_factory=dict)

    def add(
        self,
        key: str,
        value: float,
        unit: str,
        source: Path | str,
        lo: float | None = None,
        hi: float | None = None,
        confidence: float | None = None,
        interval: str | None = None,
        decimals: int | None = None,
    ) -> Number:
        value = float(value)
        lo, hi = (None if v is None or _nan(v) else float(v) for v in (lo, hi))
        number = Number(
            key=key,
            value=value,
            unit=unit,
            source=self.rel(source),
            decimals=decimals_for(value, lo, hi) if decimals is None else decimals,
            lo=lo,
            hi=hi,
            confidence=None if confidence is None or _nan(confidence) else float(confidence),
            interval=interval if lo is not None else None,
        )
        self.entries[key] = number
        return number

    def rel(self, path: Path | str) -> str:
        path = Path(path)
        try:
            return str(path.resolve().relative_to(self.root))
        except ValueError:
            return str(path)

    def to_json(self) -> str:
        data = {k: self.entries[k].as_dict() for k in sorted(self.entries)}
        return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def _nan(value) -> bool:
    try:
        return value is None or math.isnan(float(value))
    except (TypeError, ValueError):
        return True


# --- the inputs ------------------------------------------------------------------------------


@dataclass
class Inputs:
    processed: Path
    raw: Path
    tables: Path
    figures: Path
    out: Path
    margins: dict[str, float]
    confidence: float
    root: Path
    used_tables: set[str] = field(default_factory=set)
    used_figures: set[Path] = field(default_factory=set)

    def summary(self, benchmark: str, name: str) -> tuple[pd.DataFrame, Path] | None:
        path = self.processed / benchmark / f"{name}.parquet"
        return (pd.read_parquet(path), path) if path.exists() else None

    def raw_table(self, benchmark: str, table: str) -> pd.DataFrame | None:
        try:
            return schema.read_dataset(self.raw, benchmark, table)
        except FileNotFoundError:
            return None

    def raw_benchmarks(self) -> list[str]:
        if not self.raw.is_dir():
            return []
        return sorted(p.name for p in self.raw.iterdir() if list(p.glob("*/runs.parquet")))


def _label(mode: str) -> str:
    return figures.MODE_LABELS.get(mode, mode)


def _path(path: str) -> str:
    return PATH_LABELS.get(path, path)


def _ordered(frame: pd.DataFrame, column: str = "path") -> list[str]:
    present = list(dict.fromkeys(frame[column]))
    return sorted(present, key=lambda p: (PATH_ORDER.index(p) if p in PATH_ORDER else 99, p))


def _col(row: pd.Series, name: str):
    value = row.get(name)
    return None if _nan_or_missing(value) else value


def _nan_or_missing(value) -> bool:
    if value is None:
        return True
    if isinstance(value, str):
        return False
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


# --- includes --------------------------------------------------------------------------------


def include(text: str, name: str) -> str:
    """A generated file's content, verbatim, between markers (the HTML drops the markers)."""
    return f"{INCLUDE_BEGIN.format(name)}\n{text.rstrip(chr(10))}\n{INCLUDE_END}"


def _table_blocks(inputs: Inputs, stems: list[str]) -> list[str]:
    blocks = []
    for stem in stems:
        path = inputs.tables / f"{stem}.md"
        if path.exists():
            inputs.used_tables.add(path.name)
            blocks.append(include(path.read_text(encoding="utf-8"), inputs_rel(inputs, path)))
    return blocks


def inputs_rel(inputs: Inputs, path: Path) -> str:
    try:
        return str(path.resolve().relative_to(inputs.root))
    except ValueError:
        return str(path)


def figure_files(directory: Path) -> list[Path]:
    """One file per figure in ``directory``: the SVG where there is one, else the PNG."""
    if not directory.is_dir():
        return []
    stems = sorted(
        {p.name[: -len(p.suffix)] for p in directory.glob("*") if p.suffix in (".svg", ".png")}
    )
    files = []
    for stem in stems:
        svg, png = directory / f"{stem}.svg", directory / f"{stem}.png"
        files.append(svg if svg.exists() else png)
    return files


def _figure_blocks(inputs: Inputs, directory: str) -> list[str]:
    blocks = []
    for path in figure_files(inputs.figures / directory):
        inputs.used_figures.add(path)
        stem = path.name[: -len(path.suffix)]
        rel = Path(os.path.relpath(path, inputs.out)).as_posix()
        block = [f"![{stem}]({rel})", ""]
        caption = path.with_name(f"{stem}.caption.md")
        if caption.exists():
            block.append(include(caption.read_text(encoding="utf-8"), inputs_rel(inputs, caption)))
        blocks.append("\n".join(block))
    return blocks


# --- sections --------------------------------------------------------------------------------


@dataclass
class Section:
    key: str
    title: str
    raw: str | None  # the raw benchmark directory its data comes from
    tables: list[str]
    figures: str | None
    collect: str | None  # the stage that collects it, None when none exists yet
    analyse: str | None  # the stage that summarises it, None when none exists yet
    prose: Callable[[Inputs, Numbers], list[str] | None] | None = None


def _verdict_counts(
    rows: pd.DataFrame, column: str, numbers: Numbers, key: str, source: Path
) -> str | None:
    """The verdict counts ("of the 5 container modes compared, 2 equivalent, ..."), or None
    when the summary has no verdicts."""
    if column not in rows.columns or rows[column].isna().all():
        return None
    counts = rows[column].value_counts()
    total = numbers.add(f"{key}.modes_compared", len(rows), "modes", source)
    parts = []
    for verdict in ("equivalent", "overhead", "faster", "inconclusive"):
        if verdict in counts.index:
            n = numbers.add(f"{key}.n_{verdict}", int(counts[verdict]), "modes", source)
            parts.append(f"{n.text()} {verdict}")
    return f"of the {total.text()} container modes compared, " + ", ".join(parts)


def _no_verdict(stage: str) -> str:
    return (
        f"This summary has no verdict columns (it predates the verdict rule): re-run `{stage}` "
        "for verdicts against the margin."
    )


def _throughput(inputs: Inputs, numbers: Numbers) -> list[str] | None:
    found = inputs.summary("throughput", "throughput_summary")
    if found is None:
        return None
    summary, source = found
    conf = _col(summary.iloc[0], "confidence") if len(summary) else None
    paragraphs, no_verdicts = [], False
    multi_env = summary["environment"].nunique() > 1
    for env, frame in summary.groupby("environment", sort=True):
        for path in _ordered(frame):
            cells = frame[frame["path"] == path]
            ok = cells[cells["status"] == "ok"]
            base = ok[ok["mode"] == BASELINE]
            if base.empty:
                continue
            b = base.iloc[0]
            key = f"throughput.{env}.{path}"
            nat = numbers.add(
                f"{key}.native.median_gbps",
                b["median_gbps"],
                "Gbit/s",
                source,
                b["median_lo_gbps"],
                b["median_hi_gbps"],
                _col(b, "median_coverage"),
                "distribution-free order-statistic interval of the median across runs",
            )
            runs = numbers.add(f"{key}.native.n_runs", b["n_runs"], "runs", source)
            where = f"{'In ' + env + ', on' if multi_env else 'On'} the {_path(path)} path"
            text = (
                f"{where}, native TCP throughput was {nat.with_ci(' Gbit/s')} (median of "
                f"{runs.text()} runs)."
            )
            others = ok[(ok["mode"] != BASELINE) & ok["ratio"].notna()]
            ratios = {}
            for r in others.itertuples():
                ratios[r.mode] = numbers.add(
                    f"{key}.{r.mode}.pct_of_native",
                    100 * r.ratio,
                    "% of native",
                    source,
                    100 * r.ratio_lo,
                    100 * r.ratio_hi,
                    conf,
                    "cluster-bootstrap percentile interval (runs resampled whole)",
                )
            if ratios:
                counts = _verdict_counts(others, "verdict", numbers, key, source)
                lowest = min(ratios, key=lambda m: ratios[m].value)
                highest = max(ratios, key=lambda m: ratios[m].value)
                text += (
                    f" Lowest: {_label(lowest)} at {ratios[lowest].with_ci('%')} of native; "
                    f"highest: {_label(highest)} at {ratios[highest].with_ci('%')}."
                )
                text += f" Verdicts: {counts}." if counts else ""
                no_verdicts |= counts is None
            paragraphs.append(text)
    paragraphs += _udp(inputs, numbers)
    return paragraphs + ([_no_verdict("summarise-throughput")] if no_verdicts else [])


def _host(benchmark: str, stage: str, what: str) -> Callable:
    """Prose for a host benchmark summarised by pipeline.analysis.host (cpu, memory, disk): per
    test, native's median with its interval and each mode's ratio to native with its verdict."""

    def prose(inputs: Inputs, numbers: Numbers) -> list[str] | None:
        found = inputs.summary(benchmark, f"{benchmark}_summary")
        if found is None:
            return None
        summary, source = found
        conf = _col(summary.iloc[0], "confidence") if len(summary) else None
        paragraphs, no_verdicts = [], False
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
                b["median_hi"], _col(b, "median_coverage"),
                "distribution-free order-statistic interval of the median across runs",
            )  # fmt: skip
            runs = numbers.add(f"{key}.native.n_runs", b["n_runs"], "runs", source)
            better = "rate" if b["higher_is_better"] else "time"
            text = (
                f"{what}, test `{variant}` (`{metric}`): native {nat.with_ci(' ' + b['unit'])} "
                f"(median of {runs.text()} runs)."
            )
            others = ok[(ok["mode"] != BASELINE) & ok["ratio"].notna()]
            parts = []
            for r in others.itertuples():
                ratio = numbers.add(
                    f"{key}.{r.mode}.pct_of_native", 100 * r.ratio, "% of native", source,
                    100 * r.ratio_lo, 100 * r.ratio_hi, conf,
                    "cluster-bootstrap percentile interval (runs resampled whole)",
                )  # fmt: skip
                verdict = f", {r.verdict}" if isinstance(r.verdict, str) else ""
                parts.append(f"{_label(r.mode)} {ratio.with_ci('%')}{verdict}")
            if parts:
                text += f" Each mode's {better} as a share of native's: " + "; ".join(parts) + "."
                counts = _verdict_counts(others, "verdict", numbers, key, source)
                text += f" Verdicts: {counts}." if counts else ""
                no_verdicts |= counts is None
            paragraphs.append(text)
        return paragraphs + ([_no_verdict(stage)] if no_verdicts else [])

    return prose


def _udp(inputs: Inputs, numbers: Numbers) -> list[str]:
    found = inputs.summary("throughput", "throughput_udp_summary")
    if found is None:
        return []
    summary, source = found
    out = []
    for (env, path), cells in summary.groupby(["environment", "path"], sort=True):
        ok = cells[(cells["status"] == "ok") & cells["ratio"].notna() & (cells["mode"] != BASELINE)]
        if ok.empty:
            continue
        key = f"throughput_udp.{env}.{path}"
        worst = ok.loc[ok["ratio"].idxmin()]
        lossy = ok.loc[ok["loss_pct"].idxmax()]
        w = numbers.add(
            f"{key}.{worst['mode']}.pct_of_native",
            100 * worst["ratio"],
            "% of native",
            source,
            100 * worst["ratio_lo"],
            100 * worst["ratio_hi"],
            _col(worst, "confidence"),
            "cluster-bootstrap percentile interval (runs resampled whole)",
        )
        loss = numbers.add(
            f"{key}.{lossy['mode']}.loss_pct",
            lossy["loss_pct"],
            "%",
            source,
            lossy["loss_pct_lo"],
            lossy["loss_pct_hi"],
            _col(lossy, "loss_pct_coverage"),
            "distribution-free order-statistic interval of the median across runs",
        )
        out.append(
            f"UDP at a fixed offered rate, {_path(path)} path: the lowest received throughput "
            f"was {_label(worst['mode'])} at {w.with_ci('%')} of native, the highest median "
            f"loss {_label(lossy['mode'])} at {loss.with_ci('%')}."
        )
    return out


def _percentiles(benchmark: str, stage: str, what: str) -> Callable:
    def prose(inputs: Inputs, numbers: Numbers) -> list[str] | None:
        found = inputs.summary(benchmark, f"{benchmark}_summary")
        if found is None:
            return None
        summary, source = found
        paragraphs, no_verdicts = [], False
        for (env, variant), frame in summary.groupby(["environment", "variant"], sort=True):
            for path in _ordered(frame):
                cells = frame[(frame["path"] == path) & (frame["status"] == "ok")]
                base = cells[cells["mode"] == BASELINE]
                if base.empty:
                    continue
                b = base.iloc[0]
                conf = _col(b, "confidence")
                key = f"{benchmark}.{env}.{path}.{variant}"
                kind = "cluster-bootstrap percentile interval (runs resampled whole)"
                p50 = numbers.add(
                    f"{key}.native.p50_us",
                    b["p50_us"],
                    "us",
                    source,
                    b["p50_lo_us"],
                    b["p50_hi_us"],
                    conf,
                    kind,
                )
                p99 = numbers.add(
                    f"{key}.native.p99_us",
                    b["p99_us"],
                    "us",
                    source,
                    b["p99_lo_us"],
                    b["p99_hi_us"],
                    conf,
                    kind,
                )
                text = (
                    f"{what} ({variant}), {_path(path)} path: native p50 {p50.with_ci(' us')}, "
                    f"p99 {p99.with_ci(' us')}."
                )
                others = cells[(cells["mode"] != BASELINE) & cells["d_p50_us"].notna()]
                if not others.empty:
                    worst = others.loc[others["d_p50_us"].idxmax()]
                    d = numbers.add(
                        f"{key}.{worst['mode']}.d_p50_us",
                        worst["d_p50_us"],
                        "us",
                        source,
                        worst["d_p50_lo_us"],
                        worst["d_p50_hi_us"],
                        conf,
                        "paired cluster bootstrap over the runs both measured",
                    )
                    text += (
                        f" The largest p50 difference to native: {_label(worst['mode'])}, "
                        f"{d.with_ci(' us', signed=True)}."
                    )
                    counts = _verdict_counts(others, "verdict_p50", numbers, f"{key}.p50", source)
                    text += f" p50 verdicts: {counts}." if counts else ""
                    no_verdicts |= counts is None
                    counts = _verdict_counts(others, "verdict_p99", numbers, f"{key}.p99", source)
                    text += f" p99 verdicts: {counts}." if counts else ""
                paragraphs.append(text)
        return paragraphs + ([_no_verdict(stage)] if no_verdicts else [])

    return prose


STAT_NAMES = {"p50": "median", "p99": "p99"}


def _internet(inputs: Inputs, numbers: Numbers) -> list[str] | None:
    found = inputs.summary("internet_vs_dc", "internet_vs_dc_components")
    if found is None:
        return None
    components, source = found
    ok = components[components["status"] == "ok"]
    lines = [
        "Per path, protocol and per-run statistic of the round trip: the largest difference "
        "between two modes beside the run-to-run standard deviation of one mode (mixed model, "
        "run as random effect):",
        "",
    ]
    for r in ok.itertuples():
        key = f"internet_vs_dc.{r.environment}.{r.path}.{r.variant}.{r.statistic}"
        kind = "parametric-bootstrap percentile interval (mixed model refitted)"
        rng = numbers.add(
            f"{key}.mode_range_us",
            r.mode_range,
            "us",
            source,
            r.mode_range_lo,
            r.mode_range_hi,
            r.confidence,
            kind,
        )
        sd = numbers.add(
            f"{key}.sd_within_us",
            r.sd_within,
            "us",
            source,
            r.sd_within_lo,
            r.sd_within_hi,
            r.confidence,
            kind,
        )
        stat = STAT_NAMES.get(r.statistic, r.statistic)
        lines.append(
            f"- {_path(r.path)}, {r.variant}, {stat}: largest mode difference "
            f"{rng.with_ci(' us')} ({_label(r.max_effect_mode)}), run-to-run SD "
            f"{sd.with_ci(' us')}."
        )
    return ["\n".join(lines)] if len(lines) > 2 else []


def _replication(inputs: Inputs, numbers: Numbers) -> list[str] | None:
    path = inputs.tables / "replication.csv"
    if not path.exists():
        return None
    table = pd.read_csv(path)
    if "Verdict" not in table.columns:
        return None
    counts = table["Verdict"].value_counts()
    total = numbers.add("replication.published_numbers", len(table), "numbers", path)
    parts = []
    for verdict, n in counts.items():
        slug = str(verdict).replace(" ", "_")
        parts.append(
            f"{numbers.add(f'replication.n_{slug}', int(n), 'numbers', path).text()} {verdict}"
        )
    return [f"Of the {total.text()} published headline numbers: {', '.join(parts)}."]


def _lb(inputs: Inputs, numbers: Numbers) -> list[str] | None:
    """Per environment: the direct replica's rate, then each balancer's rate as a share of it
    (cluster-bootstrap interval) at every replica count measured (pipeline.analysis.lb)."""
    found = inputs.summary("lb", "lb_summary")
    if found is None:
        return None
    summary, source = found
    paragraphs = []
    for env, cells in summary.groupby("environment", sort=True):
        ok = cells[cells["status"] == "ok"]
        base = ok[ok["variant"] == "direct-r1"]
        if base.empty:
            continue
        b = base.iloc[0]
        key = f"lb.{env}"
        rate = numbers.add(
            f"{key}.direct-r1.rps", b["rps"], "req/s", source, b["rps_lo"], b["rps_hi"],
            _col(b, "rps_coverage"),
            "distribution-free order-statistic interval of the median across runs",
        )  # fmt: skip
        runs = numbers.add(f"{key}.direct-r1.n_runs", b["n_runs"], "runs", source)
        text = (
            f"One replica dialled directly served {rate.with_ci(' req/s')} (median of "
            f"{runs.text()} runs, wrk closed loop)."
        )
        parts = []
        for _, group in ok[ok["variant"] != "direct-r1"].groupby("balancer", sort=False):
            shares = []
            for r in group.sort_values("replicas").itertuples():
                if _nan_or_missing(r.ratio):
                    continue
                n = numbers.add(f"{key}.{r.variant}.replicas", r.replicas, "replicas", source)
                pct = numbers.add(
                    f"{key}.{r.variant}.pct_of_direct", 100 * r.ratio, "% of direct", source,
                    100 * r.ratio_lo, 100 * r.ratio_hi, _col(r._asdict(), "confidence"),
                    "cluster-bootstrap percentile interval (runs resampled whole)",
                )  # fmt: skip
                verdict = getattr(r, "verdict", None)
                said = f", {verdict}" if isinstance(verdict, str) and verdict else ""
                shares.append(f"{pct.with_ci('%')} with {n.text()}{said}")
            if shares:
                label = group["configuration"].iloc[0]
                parts.append(f"{label} {', '.join(shares)}")
        if parts:
            text += (
                " As a share of that rate (replicas behind the balancer, then the verdict: no "
                "margin was fixed for a balancer, so overhead, faster or inconclusive): "
                + "; ".join(parts) + "."
            )  # fmt: skip
        paragraphs.append(text)
    return paragraphs


def _coldstart(inputs: Inputs, numbers: Numbers) -> list[str] | None:
    """Per environment: native's and each engine's pooled p50 with its interval, and each
    rootless engine's "+%" against its rootful engine (pipeline.analysis.coldstart)."""
    found = inputs.summary("coldstart", "coldstart_summary")
    if found is None:
        return None
    summary, source = found
    kind = "cluster-bootstrap percentile interval (runs resampled whole)"
    paragraphs = []
    for env, cells in summary.groupby("environment", sort=True):
        ok = cells[(cells["status"] == "ok") & (cells["n_runs"] > 0)]
        if ok.empty:
            continue
        key = f"coldstart.{env}"
        parts, rootless = [], []
        for r in ok.itertuples():
            d = r._asdict()
            conf = _col(d, "confidence")
            p50 = numbers.add(
                f"{key}.{r.mode}.p50_ms", 1000 * r.p50_s, "ms", source, 1000 * r.p50_lo_s,
                1000 * r.p50_hi_s, conf, kind,
            )  # fmt: skip
            p99 = numbers.add(
                f"{key}.{r.mode}.p99_ms", 1000 * r.p99_s, "ms", source, 1000 * r.p99_lo_s,
                1000 * r.p99_hi_s, conf, kind,
            )  # fmt: skip
            text = f"{_label(r.mode)} p50 {p50.with_ci(' ms')}, p99 {p99.with_ci(' ms')}"
            said = coldstart_analysis.SAID.get(d.get("verdict_p50"))
            if r.mode != "native" and said:
                text += f" ({said} than native at p50)" if said != "inconclusive" else (
                    " (against native at p50: inconclusive)"
                )  # fmt: skip
            parts.append(text)
            if isinstance(r.rootful_mode, str) and r.rootful_mode and r.rootful_n_runs:
                plus = numbers.add(
                    f"{key}.{r.mode}.p50_plus_pct_vs_rootful", r.rootful_plus_pct_p50, "%",
                    source, r.rootful_plus_pct_p50_lo, r.rootful_plus_pct_p50_hi, conf,
                    "paired cluster bootstrap over the runs both measured",
                )  # fmt: skip
                rootless.append(
                    f"{_label(r.mode)} against {_label(r.rootful_mode)}: "
                    f"{plus.with_ci('%', signed=True)} at p50, "
                    f"{coldstart_analysis.SAID.get(d.get('rootful_verdict_p50'), 'inconclusive')}"
                )
        text = (
            "Time from the run command to nginx answering through the published port: "
            + "; ".join(parts)
            + "."
        )
        if rootless:
            text += " Rootless against rootful: " + "; ".join(rootless) + "."
        paragraphs.append(text)
    return paragraphs


_FIT = "OLS over every reading, standard errors clustered by run, t with runs - 1 df"
_RANK = "distribution-free order-statistic interval of the median across runs"


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
        parts = []
        for r in ok.itertuples():
            d, key = r._asdict(), f"footprint.{env}.{r.mode}"
            conf = _col(d, "confidence")
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
            text = (
                f"{_label(r.mode)}: {idle.with_ci(' MiB')} idle and {per.with_ci(' MiB')} per "
                f"idle container, {total.with_ci(' MiB')} at {at.text()} containers"
            )
            if r.max_count < r.at:
                top = numbers.add(f"{key}.max_count", r.max_count, "containers", source)
                text += f" (the line extended beyond the {top.text()} measured)"
            if r.mode != "docker-bridge" and not _nan_or_missing(r.ratio_lo):
                ratio = numbers.add(
                    f"{key}.per_container_vs_rootful_docker", r.ratio, "ratio", source,
                    r.ratio_lo, r.ratio_hi, conf,
                    "cluster-bootstrap percentile interval (runs resampled whole)", decimals=2,
                )  # fmt: skip
                text += f", {ratio.with_ci('x')} rootful Docker's cost per container"
                verdict = getattr(r, "verdict", None)
                if isinstance(verdict, str) and verdict:
                    said = footprint_analysis.SAID.get(verdict, verdict)
                    text += f" ({said})"
            parts.append(text)
        if parts:
            paragraphs.append(
                "The engines' own processes (total PSS, the containers' workloads excluded): "
                + "; ".join(parts)
                + "."
            )
    return paragraphs + _density(inputs, numbers)


def _density(inputs: Inputs, numbers: Numbers) -> list[str]:
    found = inputs.summary("footprint", "density_summary")
    if found is None:
        return []
    summary, source = found
    paragraphs = []
    for env, cells in summary.groupby("environment", sort=True):
        parts = []
        for r in cells[(cells["status"] == "ok") & (cells["n_runs"] > 0)].itertuples():
            d, key = r._asdict(), f"density.{env}.{r.mode}"
            conf = _col(d, "confidence")
            reached = numbers.add(
                f"{key}.reached", r.reached_median, "containers", source, r.reached_lo,
                r.reached_hi, _col(d, "reached_coverage"), _RANK, decimals=0,
            )  # fmt: skip
            mem = numbers.add(
                f"{key}.host_mib_per_container", r.mem_per_container_mib, "MiB/container",
                source, r.mem_per_container_lo_mib, r.mem_per_container_hi_mib, conf, _RANK,
                decimals=2,
            )  # fmt: skip
            text = f"{_label(r.mode)} reached {reached.with_ci()} containers"
            if r.capped and not _nan_or_missing(r.cap):
                cap = numbers.add(f"{key}.cap", r.cap, "containers", source, decimals=0)
                text += f" (the cap of {cap.text()} in every run, not a limit of the engine)"
            parts.append(f"{text}, the host's memory dropping by {mem.with_ci(' MiB')} each")
        if parts:
            paragraphs.append("Density within the profile's cap: " + "; ".join(parts) + ".")
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
        parts = []
        for r in cells[(cells["status"] == "ok") & (cells["n_runs"] > 0)].itertuples():
            d, key = r._asdict(), f"orchestration.{env}.{r.variant}"
            seconds = numbers.add(
                f"{key}.median_s", r.median_s, "s", source, r.median_lo_s, r.median_hi_s,
                _col(d, "median_coverage"), _RANK,
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
            parts.append(f"{what} {seconds.with_ci(' s')} ({runs.text()} runs)")
        if parts:
            paragraphs.append(
                "Until every replica accepted TCP connections, Docker Swarm took: "
                + "; ".join(parts)
                + "."
            )
    return paragraphs


SECTIONS: list[Section] = [
    Section(
        "cpu",
        "CPU",
        "cpu",
        ["cpu"],
        "cpu",
        "collect-cpu",
        "summarise-cpu",
        _host("cpu", "summarise-cpu", "CPU"),
    ),
    Section(
        "memory",
        "Memory",
        "memory",
        ["memory"],
        "memory",
        "collect-memory",
        "summarise-memory",
        _host("memory", "summarise-memory", "Memory bandwidth"),
    ),
    Section(
        "disk",
        "Disk",
        "disk",
        ["disk"],
        "disk",
        "collect-disk",
        "summarise-disk",
        _host("disk", "summarise-disk", "Disk"),
    ),
    Section(
        "throughput",
        "Network throughput",
        "throughput",
        ["throughput", "throughput_udp"],
        "throughput",
        "collect-throughput",
        "summarise-throughput",
        _throughput,
    ),
    Section(
        "latency",
        "Latency",
        "latency",
        ["latency"],
        "latency",
        "collect-latency",
        "summarise-latency",
        _percentiles("latency", "summarise-latency", "Round trip"),
    ),
    Section(
        "http",
        "HTTP",
        "http",
        ["http"],
        "http",
        "collect-http",
        "summarise-http",
        _percentiles("http", "summarise-http", "HTTP request latency"),
    ),
    # Named as pipeline.analysis.replication names these benchmarks.
    Section("lb", "Load balancing", "lb", ["lb"], "lb", "collect-lb", "summarise-lb", _lb),
    Section(
        "coldstart",
        "Cold start and scaling",
        "coldstart",
        ["coldstart"],
        "coldstart",
        "collect-coldstart",
        "summarise-coldstart",
        _coldstart,
    ),
    Section(
        "footprint",
        "Engine memory footprint and density",
        "footprint",
        ["footprint", "footprint_processes", "density"],
        "footprint",
        "collect-footprint",
        "summarise-footprint",
        _footprint,
    ),
    Section(
        "orchestration",
        "Swarm orchestration",
        "orchestration",
        ["orchestration"],
        "orchestration",
        "collect-orchestration",
        "summarise-orchestration",
        _orchestration,
    ),
    Section(
        "internet_vs_dc",
        "Internet vs datacenter",
        None,
        ["internet_vs_dc_sentences", "internet_vs_dc"],
        "internet_vs_dc",
        "collect-latency",
        "compare-internet-datacenter",
        _internet,
    ),
    Section(
        "replication",
        "Replication of the five articles",
        None,
        ["replication"],
        None,
        None,
        "replicate-articles",
        _replication,
    ),
]
# Produced by methods, not by a results section.
METHOD_TABLES = ["wan_calibration_sentence", "wan_calibration"]
INSTRUMENT_TABLES = ["instrument_aa", "instrument_injected"]
NOISE_TABLES = ["noise"]


def _missing_text(section: Section, inputs: Inputs, numbers: Numbers) -> str:
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
            f"Collected ({n.text()} measured run rows under `{inputs_rel(inputs, where)}`) "
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


def _section(section: Section, inputs: Inputs, numbers: Numbers) -> tuple[str, bool]:
    paragraphs = section.prose(inputs, numbers) if section.prose else None
    measured = paragraphs is not None
    blocks = [f"## {section.title}", ""]
    if not measured:
        blocks.append(_missing_text(section, inputs, numbers))
    else:
        blocks += paragraphs
    blocks += _table_blocks(inputs, section.tables)
    if section.figures:
        blocks += _figure_blocks(inputs, section.figures)
    return "\n\n".join(b for b in blocks if b != ""), measured


# --- methods ---------------------------------------------------------------------------------


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
    distinct = hosts[["environment", *cols]].drop_duplicates()
    source = inputs.raw
    lines = [
        "| Environment | " + " | ".join(t for _, t in HOST_COLUMNS) + " |",
        "| " + " | ".join([":---"] * (len(HOST_COLUMNS) + 1)) + " |",
    ]
    seen: dict[tuple, int] = {}
    for _, row in distinct.iterrows():
        host = (row["environment"], row["host"])
        seen[host] = seen.get(host, -1) + 1
        suffix = f".{seen[host]}" if seen[host] else ""
        cells = [f"`{row['environment']}`"]
        for col, _ in HOST_COLUMNS:
            value = row[col]
            if _nan_or_missing(value):
                cells.append("n/a")
            elif col in NUMERIC_HOST:
                v = float(value) / 2**30 if col == "mem_total_bytes" else float(value)
                n = numbers.add(
                    f"hosts.{row['environment']}.{row['host']}{suffix}.{col}",
                    v,
                    NUMERIC_HOST[col],
                    source,
                    decimals=1 if col == "mem_total_bytes" else 0,
                )
                cells.append(n.text())
            else:
                cells.append(f"`{value}`")
        lines.append("| " + " | ".join(cells) + " |")
    intro = "Hosts, as recorded by every campaign (one row per distinct set of facts):"
    return [intro, "\n".join(lines)]


def _runs(inputs: Inputs, numbers: Numbers, benchmarks: list[str]) -> list[str]:
    lines = []
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
        text = (
            f"- `{b}`: {n_cells.text()} (mode, path, variant) cells in {n_runs.text()} runs, "
            f"{n_orders.text()} distinct measurement orders"
        )
        if len(ok):
            lo = numbers.add(f"{key}.ok_runs_per_cell_min", ok.min(), "runs", src)
            hi = numbers.add(f"{key}.ok_runs_per_cell_max", ok.max(), "runs", src)
            text += f"; measured runs per cell: {_span(lo, hi)}"
        found = inputs.summary(b, f"{b}_summary")
        if found is not None and "n_samples" in found[0].columns:
            s = found[0][found[0]["status"] == "ok"]["n_samples"]
            if len(s):
                lo = numbers.add(f"{key}.samples_per_cell_min", s.min(), "samples", found[1])
                hi = numbers.add(f"{key}.samples_per_cell_max", s.max(), "samples", found[1])
                text += f"; samples per cell (all runs pooled): {_span(lo, hi)}"
        lines.append(text + ".")
    return lines


def _span(lo: Number, hi: Number) -> str:
    return lo.text() if lo.text() == hi.text() else f"{lo.text()} to {hi.text()}"


def _modes(inputs: Inputs, benchmarks: list[str]) -> str:
    modes: set[str] = set()
    for b in benchmarks:
        runs = inputs.raw_table(b, "runs")
        if runs is not None:
            modes |= set(runs["mode"])
    ordered = sorted(modes, key=lambda m: (figures.mode_rank(m), m))
    return "Modes in this campaign: " + ", ".join(f"{_label(m)} (`{m}`)" for m in ordered) + "."


def _seeds(inputs: Inputs) -> set:
    seeds = set()
    for b in ("throughput", "latency", "http"):
        found = inputs.summary(b, f"{b}_summary")
        if found is not None and "seed" in found[0].columns:
            seeds |= set(found[0]["seed"].dropna().astype(int))
    return seeds


def _duty_cycle(inputs: Inputs, numbers: Numbers, benchmarks: list[str]) -> list[str]:
    lines = []
    for b in benchmarks:
        for dataset in sorted((inputs.raw / b).glob("*/runs.parquet")):
            env = dataset.parent.name
            record = dataset.parent / "campaign.json"
            if not record.exists():
                lines.append(f"- `{b}` (`{env}`): not recorded (no campaign.json).")
                continue
            data = json.loads(record.read_text())
            if data.get("duty_cycle") is None:
                lines.append(f"- `{b}` (`{env}`): not recorded (no session timings).")
                continue
            key = f"methods.{b}.{env}.duty_cycle"
            d = numbers.add(key, data["duty_cycle"], "fraction", record, decimals=2)
            w = numbers.add(f"{key}.window_s", data["window_s"], "s", record, decimals=0)
            t = numbers.add(f"{key}.wall_s", data["wall_s"], "s", record, decimals=0)
            where = ""
            if data.get("client_s") is not None:  # the overhead's split, recorded since 2026-11
                servers = numbers.add(f"{key}.servers_s", data["deploy_s"] + data["stop_s"],
                                      "s", record, decimals=0)  # fmt: skip
                client = numbers.add(f"{key}.client_overhead_s", data["client_overhead_s"],
                                     "s", record, decimals=0)  # fmt: skip
                where = (f"; {servers.text()} s starting and stopping servers, {client.text()} s "
                         "in client commands outside their windows (SSH, the tool's own "
                         "start-up)")  # fmt: skip
            lines.append(
                f"- `{b}` (`{env}`): {d.text()} ({w.text()} s inside load windows of "
                f"{t.text()} s wall{where}){_placement(data.get('placements') or [])}."
            )
    return lines


def _placement(placements: list[dict]) -> str:
    """The lab's CPU placement of a campaign's sessions, as a clause of its duty-cycle line."""
    said = []
    for p in placements:
        if p["placement"] == "unavailable":
            said.append(f"CPU placement not applied: {p['reason']}")
        elif p["placement"] == "split":
            server, client = p["cpus"]["node1"], p["cpus"]["dc-client"]
            said.append(f"servers' hosts on CPU {server}, clients' hosts on CPU {client}")
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
    lines = ["WAN emulator calibration (native server, Internet minus datacenter round trip):\n"]
    for r in table.to_dict("records"):
        if not measured or r["Quantile"] != "p50":
            continue
        key = f"wan_calibration.{r['One-way delay (ms)']}ms.{r['Protocol'].lower()}.p50"
        delay = numbers.add(f"{key}.delay_ms", _parse(r["One-way delay (ms)"]), "ms", path)
        expected_us = _parse(r["Expected added RTT (us)"])
        expected = numbers.add(f"{key}.expected_us", expected_us, "us", path, decimals=0)
        m = _interval(r[measured[0]])
        e = _interval(r[excess[0]]) if excess else None
        add = numbers.add(
            f"{key}.added_us",
            *m[:1],
            "us",
            path,
            *m[1:],
            inputs.confidence,
            "paired run-cluster bootstrap",
            decimals=0,
        )
        text = (
            f"- {delay.text()} ms configured one way, {r['Protocol']}: the median round trip "
            f"grew by {add.with_ci(' us')} against {expected.text()} us expected"
        )
        if e is not None:
            ex = numbers.add(
                f"{key}.excess_us",
                e[0],
                "us",
                path,
                e[1],
                e[2],
                inputs.confidence,
                "paired run-cluster bootstrap",
                decimals=0,
            )
            text += f" (emulator excess {ex.with_ci(' us', signed=True)})"
        lines.append(text + ".")
    return ["\n".join(lines), *_table_blocks(inputs, METHOD_TABLES)]


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
    lines = [text + "."]
    injected, path = found
    if len(injected):
        lines.append("Injected overheads, recovered by the same pipeline:\n")
        for r in injected.itertuples():
            key = f"instrument.injected.{r.environment}.{r.control}.{r.variant}".replace(" ", "_")
            exp = numbers.add(f"{key}.expected", r.expected, r.unit, path)
            got = numbers.add(f"{key}.recovered", r.recovered, r.unit, path, r.recovered_lo,
                              r.recovered_hi, r.coverage, r.interval_kind)  # fmt: skip
            inside = "n/a" if pd.isna(r.recovered_within) else (
                "inside" if r.recovered_within else "outside")  # fmt: skip
            err = numbers.add(f"{key}.error_pct", r.error_pct, "%", path, decimals=2)
            lines.append(
                f"- {r.injected} ({r.variant}): expected {exp.text()} {r.unit}, recovered "
                f"{got.with_ci()} {r.unit} ({err.text(signed=True)}%): expected value {inside} "
                "the interval."
            )
    return ["\n".join(lines), *_table_blocks(inputs, INSTRUMENT_TABLES)]


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
        "Run-to-run noise (SD of one configuration's per-run value across runs, from a mixed "
        "model with mode fixed and run random, as % of native's mean; smallest to largest over "
        "each benchmark's variants, paths and statistics): " + "; ".join(parts) + "."
    )
    return [text, *_table_blocks(inputs, NOISE_TABLES)]


def _parse(text: str) -> float:
    return float(str(text).replace(",", ""))


def _interval(text: str) -> tuple[float, float, float]:
    """ "40,123 [40,091, 40,145]" -> (40123, 40091, 40145); the separator is ", " (with a
    space), thousands separators have none."""
    point, rest = str(text).split("[", 1)
    lo, hi = rest.rstrip("] ").split(", ")
    return _parse(point), _parse(lo), _parse(hi)


def _methods(inputs: Inputs, numbers: Numbers, benchmarks: list[str]) -> str:
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
    blocks += _hosts(inputs, numbers, benchmarks)
    blocks.append(_modes(inputs, benchmarks))
    blocks.append(
        "Runs and cells per benchmark (a run measures every cell once, in an order drawn from a "
        "seeded random permutation of that run's cells, each after a recorded warm-up):"
    )
    blocks.append("\n".join(_runs(inputs, numbers, benchmarks)) or "No runs were collected.")
    seeds = sorted(_seeds(inputs))
    # A seed is an identifier, not a quantity: a code span, as written in the summaries.
    seed_text = " Bootstrap seed: " + ", ".join(f"`{s}`" for s in seeds) + "." if seeds else ""
    blocks.append(
        f"Statistics: per-run values are the unit of inference; every interval is at "
        f"{conf.text()}%. Equivalence margins on the ratio to native, fixed before any data: "
        f"{', '.join(margins)}. A mode is called equivalent only when the {eq.text()}% interval "
        f"of its ratio lies inside the margin and a paired TOST agrees; otherwise an interval "
        f"wholly on one side of parity is an overhead (or faster) when a paired t test on the "
        f"per-run log ratios agrees, else inconclusive. Both tests need at least 3 paired "
        f"runs.{seed_text}"
    )
    blocks += _wan(inputs, numbers)
    blocks += _instrument(inputs, numbers)
    blocks += _noise(inputs, numbers)
    duty = _duty_cycle(inputs, numbers, benchmarks)
    blocks.append(
        "Duty cycle (seconds inside load windows / wall seconds of the campaign) and, on the "
        "embedded lab, where its hosts ran (they share one machine's CPUs: \"every host on "
        'every CPU" leaves a client and its server to the scheduler, which now and then puts '
        "them on one CPU; a split placement gives the server's host and the clients' hosts "
        "disjoint CPUs):\n\n" + ("\n".join(duty) if duty else "not recorded.")
    )
    return "\n\n".join(b for b in blocks if b != "")


# --- limitations -----------------------------------------------------------------------------


def _reason(text) -> str:
    """A recorded reason, quoted as recorded (its numbers, "after 300 pings", are the tool's
    words, not the article's: the quotes mark them), or "no reason recorded"."""
    text = "" if _nan_or_missing(text) else str(text)
    text = re.sub(r"^(skipped|failed):\s*", "", text).strip()
    return f"“{text}”" if text else "no reason recorded"


def _not_ok(inputs: Inputs, numbers: Numbers, benchmarks: list[str]) -> list[str]:
    """Every skipped or failed (benchmark, mode, path, variant) with its recorded reason."""
    lines = []
    for b in benchmarks:
        runs = inputs.raw_table(b, "runs")
        if runs is None:
            continue
        bad = runs[runs["status"] != "ok"].copy()
        if bad.empty:
            continue
        bad["why"] = bad["reason"].map(_reason)
        n_total = runs["run"].nunique()
        groups = bad.groupby(["status", "mode", "path", "why"], sort=False)
        for (status, mode, path, why), rows in groups:
            variants = ", ".join(sorted(set(rows["variant"].dropna())))
            key = f"limitations.{b}.{status}.{mode}.{path}.{variants.replace(', ', '+')}"
            n = numbers.add(f"{key}.runs", rows["run"].nunique(), "runs", inputs.raw / b)
            total = numbers.add(f"{key}.runs_planned", n_total, "runs", inputs.raw / b)
            lines.append(
                f"- `{b}`: {_label(mode)} (`{mode}`) on the {_path(path)} path ({variants}) "
                f"{status} in {n.text()} of {total.text()} runs: {why}"
            )
    return lines


def _summary_not_ok(inputs: Inputs, raw_benchmarks: list[str]) -> list[str]:
    """Skipped cells of summaries whose raw data is not at hand (the reason kept there)."""
    lines = []
    for b in ("throughput", "latency", "http"):
        found = inputs.summary(b, f"{b}_summary")
        if found is None or b in raw_benchmarks:
            continue
        bad = found[0][found[0]["status"] != "ok"]
        for r in bad.drop_duplicates(["mode", "path", "reason"]).itertuples():
            lines.append(
                f"- `{b}`: {_label(r.mode)} (`{r.mode}`) on the {_path(r.path)} path "
                f"{r.status}: {_reason(r.reason)}"
            )
    return lines


def _limitations(
    inputs: Inputs, numbers: Numbers, benchmarks: list[str], missing: list[Section]
) -> str:
    blocks = ["## Limitations"]
    skipped = _not_ok(inputs, numbers, benchmarks) + _summary_not_ok(inputs, benchmarks)
    blocks.append(
        "Modes that did not run, with the reason recorded by the campaign:\n\n"
        + ("\n".join(skipped) if skipped else "none: every planned mode ran.")
    )
    if missing:
        blocks.append(
            "Not measured or not analysed in this campaign:\n\n"
            + "\n".join(f"- {s.title}: {_missing_text(s, inputs, numbers)}" for s in missing)
        )
    coverage = []
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
            coverage.append(
                f"With this few runs a distribution-free interval of a median cannot reach the "
                f"stated level: the throughput intervals span all runs and cover as little as "
                f"{c.text()}% (the tables give each cell's coverage)."
            )
    blocks += coverage
    return "\n\n".join(blocks)


# --- assembly --------------------------------------------------------------------------------


@dataclass
class Article:
    markdown: str
    numbers: Numbers
    figures: list[Path]
    tables: list[str]


def assemble(
    processed_dir: Path | str,
    raw_dir: Path | str,
    tables_dir: Path | str,
    figures_dir: Path | str,
    out_dir: Path | str,
    margins: dict[str, float],
    confidence: float = 0.95,
    root: Path | str | None = None,
) -> Article:
    """The article's Markdown and its numbers, from the generated files (nothing is written)."""
    root = Path(root or Path.cwd()).resolve()
    inputs = Inputs(
        Path(processed_dir),
        Path(raw_dir),
        Path(tables_dir),
        Path(figures_dir),
        Path(out_dir),
        dict(margins),
        confidence,
        root,
    )
    numbers = Numbers(root)
    benchmarks = inputs.raw_benchmarks()
    parts = [
        "# How much do containers really cost?",
        "Assembled by `pipeline.analysis.article` from the generated tables, figures and "
        "`numbers.json`: every number below comes from those files.",
    ]
    missing = []
    for section in SECTIONS:
        text, measured = _section(section, inputs, numbers)
        parts.append(text)
        if not measured:
            missing.append(section)
    parts.append(_methods(inputs, numbers, benchmarks))
    parts.append(_limitations(inputs, numbers, benchmarks, missing))
    extra = _unclaimed(inputs)
    if extra:
        parts.append("## Other generated tables and figures\n\n" + "\n\n".join(extra))
    markdown = "\n\n".join(parts).rstrip() + "\n"
    return Article(markdown, numbers, sorted(inputs.used_figures), sorted(inputs.used_tables))


def _unclaimed(inputs: Inputs) -> list[str]:
    """Tables and figures no section claims: included anyway, so nothing generated is lost."""
    stems = [p.stem for p in sorted(inputs.tables.glob("*.md")) if p.name not in inputs.used_tables]
    blocks = _table_blocks(inputs, stems)
    claimed = {s.figures for s in SECTIONS if s.figures}
    if inputs.figures.is_dir():
        for d in sorted(p.name for p in inputs.figures.iterdir() if p.is_dir()):
            if d not in claimed:
                blocks += _figure_blocks(inputs, d)
    return blocks


def build(
    processed_dir: Path | str,
    raw_dir: Path | str,
    tables_dir: Path | str,
    figures_dir: Path | str,
    out_dir: Path | str,
    margins: dict[str, float],
    confidence: float = 0.95,
    root: Path | str | None = None,
) -> dict[str, Path]:
    """Write ``numbers.json``, ``article.md`` and ``article.html`` into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    article = assemble(
        processed_dir, raw_dir, tables_dir, figures_dir, out, margins, confidence, root
    )
    paths = {
        "numbers": out / "numbers.json",
        "markdown": out / "article.md",
        "html": out / "article.html",
    }
    paths["numbers"].write_text(article.numbers.to_json(), encoding="utf-8")
    paths["markdown"].write_text(article.markdown, encoding="utf-8")
    paths["html"].write_text(to_html(article.markdown, out), encoding="utf-8")
    return paths


# --- HTML: a converter for exactly the Markdown subset emitted above ------------------------
#
# Headings, paragraphs, "- " lists, pipe tables with a "Table:" caption, images on a line of
# their own, `code` spans and include markers. The `markdown` package is not a dependency; this
# subset is small enough to convert here, and a test checks the figures are inline.

STYLE = (
    "body{font-family:sans-serif;max-width:70em;margin:2em auto;padding:0 1em;line-height:1.45}"
    "table{border-collapse:collapse;font-size:0.85em;margin:0.5em 0 1.5em}"
    "td,th{border:1px solid #ccc;padding:2px 6px}th{background:#f3f3f3}"
    ".caption{font-style:italic;font-size:0.9em}img{max-width:100%}"
    "code{background:#f3f3f3;padding:0 2px}"
)
_MIME = {".svg": "image/svg+xml", ".png": "image/png"}


def data_uri(path: Path) -> str:
    """A figure file as a ``data:`` URI. The article references the SVG where there is one: a
    fraction of the PNG's size (scale 2), and its Liberation Sans text falls back to the
    metric-compatible Arial/Helvetica, so labels keep their room."""
    encoded = base64.b64encode(path.read_bytes()).decode("ascii")
    return f"data:{_MIME[path.suffix]};base64,{encoded}"


def _inline(text: str) -> str:
    parts = re.split(r"(`[^`]*`)", text)
    out = []
    for part in parts:
        if part.startswith("`") and part.endswith("`") and len(part) >= 2:
            out.append(f"<code>{html.escape(part[1:-1])}</code>")
        else:
            out.append(html.escape(part).replace("\\|", "|"))
    return "".join(out)


def _row(line: str) -> list[str]:
    cells = re.split(r"(?<!\\)\|", line.strip().strip("|"))
    return [c.strip() for c in cells]


def _table_html(lines: list[str]) -> str:
    head, body = _row(lines[0]), [_row(x) for x in lines[2:]]
    rows = ["<tr>" + "".join(f"<th>{_inline(c)}</th>" for c in head) + "</tr>"]
    rows += ["<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in r) + "</tr>" for r in body]
    return "<table>\n" + "\n".join(rows) + "\n</table>"


def to_html(markdown: str, base_dir: Path | str) -> str:
    """A self-contained HTML page of ``markdown``; images resolved against ``base_dir`` and
    embedded as data URIs."""
    base = Path(base_dir)
    out: list[str] = []
    blocks = re.split(r"\n\s*\n", markdown.strip())
    title = "Article"
    for block in blocks:
        lines = [x for x in block.split("\n") if not re.fullmatch(r"\s*<!--.*-->\s*", x)]
        while lines:
            first = lines[0]
            if first.startswith("#"):
                level = len(first) - len(first.lstrip("#"))
                text = first[level:].strip()
                title = text if level == 1 else title
                out.append(f"<h{level}>{_inline(text)}</h{level}>")
                lines = lines[1:]
            elif m := re.fullmatch(r"!\[([^\]]*)\]\(([^)]+)\)", first.strip()):
                src = data_uri(base / m.group(2))
                out.append(f'<figure><img alt="{html.escape(m.group(1))}" src="{src}"></figure>')
                lines = lines[1:]
            elif first.startswith("Table: "):
                out.append(f'<p class="caption">{_inline(first)}</p>')
                lines = lines[1:]
            elif first.startswith("|"):
                n = next((i for i, x in enumerate(lines) if not x.startswith("|")), len(lines))
                out.append(_table_html(lines[:n]))
                lines = lines[n:]
            elif first.startswith("- "):
                n = next((i for i, x in enumerate(lines) if not x.startswith("- ")), len(lines))
                items = "".join(f"<li>{_inline(x[2:])}</li>" for x in lines[:n])
                out.append(f"<ul>{items}</ul>")
                lines = lines[n:]
            else:
                n = next(
                    (i for i, x in enumerate(lines) if x.startswith(("|", "- ", "#", "!["))),
                    len(lines),
                )
                n = max(n, 1)
                out.append(f"<p>{_inline(' '.join(lines[:n]))}</p>")
                lines = lines[n:]
    return (
        f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
        + "\n".join(out)
        + "\n</body>\n</html>\n"
    )
