"""Article tables as files: Markdown (pipe table + caption), CSV and a LaTeX tabular fragment.

The article is assembled from these files; no number is retyped. Cells are written as they
are in the frame (format numbers before calling ``write``), missing values as ``na_rep``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.analysis import stats

_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
}


def write_processed(frames: dict[str, pd.DataFrame], processed_dir: Path | str) -> list[Path]:
    """Each frame as ``<name>.parquet`` in ``processed_dir`` (a summary, ``*_summary``, also as
    ``.csv`` for readers without parquet); returns the paths in the order written."""
    out = Path(processed_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, frame in frames.items():
        paths.append(out / f"{name}.parquet")
        frame.to_parquet(paths[-1], index=False)
        if name.endswith("_summary"):
            paths.append(out / f"{name}.csv")
            frame.to_csv(paths[-1], index=False, lineterminator="\n")
    return paths


def interval_text(point: float | None, lo: float, hi: float, fmt: str) -> str | None:
    """A table cell "point [lo, hi]" in ``fmt`` (e.g. "+.1f"); "point (no interval)" when the
    interval is missing (one run); None (shown as n/a) without a point."""
    if point is None or np.isnan(point):
        return None
    if np.isnan(lo) or np.isnan(hi):
        return f"{point:{fmt}} (no interval)"
    return f"{point:{fmt}} [{lo:{fmt}}, {hi:{fmt}}]"


def rows_of(frame: pd.DataFrame, **key) -> pd.DataFrame:
    """The rows of ``frame`` whose columns equal ``key`` (column=value): one cell's runs."""
    mask = np.ones(len(frame), dtype=bool)
    for column, value in key.items():
        mask &= (frame[column] == value).to_numpy()
    return frame[mask]


def runs_text(n_runs: int, n_runs_planned: int) -> str:
    """A Runs cell: "5", or "4 of 5" when runs were planned but not measured."""
    return f"{n_runs}" if n_runs == n_runs_planned else f"{n_runs} of {n_runs_planned}"


def first(summary: pd.DataFrame, column: str):
    """The column's value on the first row (a table-wide setting), or None."""
    return summary[column].iloc[0] if column in summary.columns and len(summary) else None


# --- a summary row's status and note --------------------------------------------------------


def as_text(value) -> str:
    """``value`` as text; None and NaN (a missing reason read back from parquet) as ""."""
    return "" if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)


def status_text(status: str, reason) -> str:
    """``"skipped: why"`` without doubling the prefix when the reason already starts with it."""
    reason = as_text(reason)
    return reason if reason.startswith(status) else f"{status}: {reason}".rstrip(": ")


def cell_status(
    run_rows: pd.DataFrame, n_runs_measured: int, metric: str | None = None
) -> tuple[str, str | None]:
    """(status, reason) of a cell from its rows in ``runs`` and how many runs gave samples
    (of ``metric``, when given: it names the metric in the reason of a cell without any)."""
    counts = run_rows["status"].value_counts()
    n_planned = run_rows["run"].nunique()
    reasons = [r for r in dict.fromkeys(run_rows.loc[run_rows["status"] != "ok", "reason"]) if r]
    if n_runs_measured > 0:
        n_missing = int(counts.get("failed", 0)) + int(counts.get("skipped", 0))
        if n_missing:
            why = "; ".join(reasons) if reasons else "no reason recorded"
            return "ok", f"{n_missing} of {n_planned} runs not measured: {why}"
        return "ok", None
    if counts.get("failed", 0):
        return "failed", "; ".join(reasons) or "failed, no reason recorded"
    if counts.get("skipped", 0):
        return "skipped", "; ".join(reasons) or "skipped, no reason recorded"
    if counts.get("ok", 0):
        return "no data", f"status ok but no {metric + ' ' if metric else ''}samples"
    return "missing", "no runs recorded"


def note_parts(row: pd.Series) -> list[str]:
    """The start of a table row's note: why it was not measured; else that it is the baseline
    and the reason it carries (runs not measured)."""
    if row["status"] != "ok":
        return [status_text(row["status"], row["reason"])]
    parts = ["baseline for this path"] if row["mode"] == "native" else []
    return [*parts, as_text(row["reason"])] if as_text(row["reason"]) else parts


def note(row: pd.Series, stat: str = "median", interval: str = "interval of the median is") -> str:
    """A summary row's note: why it was not measured, or what limits it (``stat``'s
    distribution-free interval when it is the range of the runs, why no TOST was run)."""
    parts = note_parts(row)
    if row["status"] == "ok" and not row[f"{stat}_ci_reached"]:
        parts.append(
            f"{interval} the range of {row['n_runs']} runs "
            f"(coverage {row[f'{stat}_coverage']:.1%} < {row['confidence']:.0%})"
        )
    if row["status"] == "ok" and as_text(row.get("tost_reason")):
        parts.append(f"no TOST: {row['tost_reason']}")
    return "; ".join(parts)


def latex_escape(text: str) -> str:
    """Escape the characters LaTeX treats specially (in one pass, so escapes are not re-escaped)."""
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


def _cells(df: pd.DataFrame, na_rep: str) -> list[list[str]]:
    return [[na_rep if _isna(v) else str(v) for v in row] for row in df.itertuples(index=False)]


def _isna(value) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _numeric(df: pd.DataFrame) -> list[bool]:
    return [
        pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])
        for c in df.columns
    ]


def to_markdown(df: pd.DataFrame, caption: str, na_rep: str = "n/a") -> str:
    """Pipe table preceded by a ``Table: caption`` line (pandoc's caption syntax)."""

    def md(text: str) -> str:
        return text.replace("|", r"\|").replace("\n", " ")

    header = [md(str(c)) for c in df.columns]
    align = ["---:" if num else ":---" for num in _numeric(df)]
    lines = [f"Table: {md(caption.strip())}", ""]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("| " + " | ".join(align) + " |")
    lines += ["| " + " | ".join(md(c) for c in row) + " |" for row in _cells(df, na_rep)]
    return "\n".join(lines) + "\n"


def to_latex(df: pd.DataFrame, caption: str, na_rep: str = "n/a") -> str:
    """A ``tabular`` fragment (no float, no packages beyond LaTeX itself), caption as a comment.

    The including document puts it in its own ``table`` environment with its own caption.
    """
    spec = "".join("r" if num else "l" for num in _numeric(df))
    caption_comment = " ".join(caption.split())
    lines = [f"% {caption_comment}", rf"\begin{{tabular}}{{{spec}}}", r"\hline"]
    lines.append(" & ".join(latex_escape(str(c)) for c in df.columns) + r" \\")
    lines.append(r"\hline")
    lines += [" & ".join(latex_escape(c) for c in row) + r" \\" for row in _cells(df, na_rep)]
    lines += [r"\hline", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def write(
    df: pd.DataFrame, out_dir: Path | str, stem: str, caption: str, na_rep: str = "n/a"
) -> list[Path]:
    """Write ``<stem>.md``, ``<stem>.csv`` and ``<stem>.tex`` into ``out_dir``; return the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md, csv, tex = out / f"{stem}.md", out / f"{stem}.csv", out / f"{stem}.tex"
    md.write_text(to_markdown(df, caption, na_rep), encoding="utf-8")
    df.to_csv(csv, index=False, na_rep=na_rep, lineterminator="\n")
    tex.write_text(to_latex(df, caption, na_rep), encoding="utf-8")
    return [md, csv, tex]


# --- verdicts against the equivalence margin (see stats.verdict) ---------------------------


def margin_text(margin: float) -> str:
    """0.05 -> "±5%", 0.025 -> "±2.5%"."""
    return f"±{100 * margin:g}%"


def resolvable_text(resolvable: float, n_runs: int, direction: str | None = None) -> str | None:
    """ "a drop under 7.3% cannot be resolved with 3 runs" (``stats.Mde.fraction``, the
    minimum detectable effect under the table's rule), or None when it is unknown.
    ``direction`` is ``stats.Mde.direction``: "drop" (higher is better: the mode's value
    lower by that fraction), "rise" (lower is better); None says "a difference"."""
    if resolvable is None or not np.isfinite(resolvable) or n_runs < 2:
        return None
    pct = 100 * resolvable
    what = direction if direction in ("drop", "rise") else "difference"
    if pct < 100:
        return f"a {what} under {pct:.2g}% cannot be resolved with {n_runs} runs"
    # from a doubling up, a multiple reads better than "30,460,288%"; beyond tenfold the
    # runs resolve nothing a reader would ask about
    times = 1 + resolvable
    if times >= 10:
        return f"not even a tenfold {what} can be resolved with {n_runs} runs"
    return f"a {what} under {times:.2g}x cannot be resolved with {n_runs} runs"


def verdict_text(
    verdict,
    lo: float,
    hi: float,
    higher_is_better: bool = True,
    resolvable: float = float("nan"),
    n_runs: int = 0,
) -> str | None:
    """A table cell for ``stats.verdict``'s result; ``(lo, hi)`` is the 95% interval of the ratio.

    "equivalent" whose 95% interval still excludes 1 reads "equivalent (small overhead)" or
    "equivalent (slightly faster)": a real difference, smaller than the margin. "inconclusive"
    says the smallest difference the table's adjusted test detects with 80% power when
    ``resolvable`` is known (``stats.Mde.fraction``: a drop when ``higher_is_better``, else a
    rise). No verdict (None or NaN, e.g. not measured) is None, which ``write`` shows as n/a.
    """
    if verdict is None or (isinstance(verdict, float) and np.isnan(verdict)):
        return None
    if verdict == "equivalent":
        side = stats.difference(lo, hi, higher_is_better)
        if side == "overhead":
            return "equivalent (small overhead)"
        if side == "faster":
            return "equivalent (slightly faster)"
    if verdict == "inconclusive":
        why = resolvable_text(resolvable, n_runs, "drop" if higher_is_better else "rise")
        return f"inconclusive ({why})" if why else "inconclusive"
    return str(verdict)


def verdict_columns(summary: pd.DataFrame, higher_is_better: bool | None = None) -> tuple:
    """A summary's Verdict and TOST p columns, from the engine's columns under the summary's
    names (``engine.SUMMARY_NAMES``): empty for native itself where it was measured, n/a
    where nothing was compared. ``higher_is_better``: the table's direction, else each row's
    own column."""
    verdicts, p_values = [], []
    for r in summary.itertuples():
        if r.mode == "native" and r.n_runs:
            verdicts.append("")
            p_values.append("")
            continue
        hib = r.higher_is_better if higher_is_better is None else higher_is_better
        verdicts.append(verdict_text(r.verdict, r.ratio_lo, r.ratio_hi, hib, r.resolvable,
                                     r.ratio_n_runs))  # fmt: skip
        p_values.append(p_text(r.tost_p))
    return verdicts, p_values


def percent_of_native(r) -> str | None:
    """A "% of native" cell: the ratio in percent with its interval ("98.2 [97.1, 99.3]"),
    "100 (baseline)" for native itself where it was measured, n/a (None) without a ratio."""
    if r.mode == "native" and r.n_runs:
        return "100 (baseline)"
    return interval_text(100 * r.ratio, 100 * r.ratio_lo, 100 * r.ratio_hi, ".1f")


def percent_text(r) -> str:
    """A figure's "% of native" label: "98.2% [97.1, 99.3]", "baseline" for native itself where
    it was measured, "n/a" without a ratio."""
    if r.mode == "native" and r.n_runs:
        return "baseline"
    if np.isnan(r.ratio):
        return "n/a"
    if np.isnan(r.ratio_lo):
        return f"{100 * r.ratio:.1f}% (no interval)"
    return f"{100 * r.ratio:.1f}% [{100 * r.ratio_lo:.1f}, {100 * r.ratio_hi:.1f}]"


def verdict_headline(r) -> str:
    """A headline's verdict for a compared mode: ", verdict equivalent (90% [lo, hi], TOST p
    0.000)"; nothing for native itself or a cell without a comparison."""
    if r.mode == "native" or r.verdict is None or pd.isna(r.verdict) or not r.verdict:
        return ""
    level = f"{r.equivalence_confidence:.0%}"
    tost = "" if np.isnan(r.tost_p) else f", TOST p {r.tost_p:.3f}"
    return f", verdict {r.verdict} ({level} [{r.ratio_eq_lo:.4f}, {r.ratio_eq_hi:.4f}]{tost})"


def p_text(p: float) -> str | None:
    """A p-value cell: three decimals, "<0.001" below that, None (n/a) when not computed."""
    if p is None or np.isnan(p):
        return None
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def verdict_caption(
    margin: float, confidence: float, values: str, multiplicity: str | None = None
) -> str:
    """The caption sentences that state the estimate, the verdict rule, the margin, the levels
    and the multiplicity adjustment. ``values`` names the per-run values the ratios are of
    (e.g. "the per-run throughputs"); ``multiplicity`` is the summary's column of that name
    (e.g. "holm across 24 comparisons")."""
    eq = stats.equivalence_level(confidence)
    alpha = 1.0 - confidence
    text = (
        f"Ratio to native: geometric mean of the per-run ratios of {values} over the runs both "
        f"measured, with its {confidence:.0%} Student t interval (per-run log ratios); it is "
        "the estimate the verdict tests. "
        f"Verdict, against a margin of {margin_text(margin)} on the ratio fixed in params.yaml "
        f"before any data was collected: equivalent when the {eq:.0%} t interval lies inside "
        f"[{1 - margin:g}, {1 + margin:g}] (a paired TOST at {alpha:.0%}; it needs at least "
        f"{stats.TOST_MIN_RUNS} paired runs: with fewer, nothing is called equivalent); "
        f"otherwise overhead (faster) when a paired t test rejects a ratio of 1 at {alpha:.0%} "
        "and the ratio is on the worse (better) side; otherwise inconclusive, with the smallest "
        "difference the table's adjusted test detects with 80% power at these runs (a drop of "
        "a rate, a rise of a time). "
        '"equivalent (small overhead)": the difference is real (its '
        f"{confidence:.0%} interval excludes 1) but smaller than the margin."
    )
    if multiplicity:
        method = multiplicity.split(" ", 1)
        name = {"holm": "Holm", "bh": "Benjamini-Hochberg", "none": "no"}.get(method[0], method[0])
        rest = f" ({method[1]})" if len(method) > 1 else ""
        text += (
            f" Multiplicity: {name} adjustment of the table's p-values{rest}; the verdicts "
            "follow the adjusted p-values, the intervals are per comparison."
        )
    return text
