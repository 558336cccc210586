"""What the lab's emulated wide-area path really adds, measured with the study's own tools.

The Internet path of the embedded lab is a userspace emulator (the kernel has no netem). Its
own cost and its accuracy are part of every Internet-path number, so they are measured, not
assumed: native latency on the dc path and on the Internet path, with the emulator set to a
zero delay and to each configured delay (jitter and loss off). The added round trip should be
2 x the one-way delay; what it adds beyond that is the emulator's cost.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from pipeline.analysis import latency as latency_analysis
from pipeline.analysis import stats
from pipeline.data.calibration import label

METRICS = {"udp": "udp_rtt", "tcp": "tcp_rtt"}
QUANTILES = (0.5, 0.99)
COLUMNS = [
    "delay_ms", "variant", "q", "expected_added_us", "added_us", "added_lo_us", "added_hi_us",
    "excess_us", "excess_lo_us", "excess_hi_us", "n_runs",
]  # fmt: skip


def summarise(
    raw_dir: str | Path,
    delays_ms: list[float],
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Per delay, variant and quantile: Internet minus dc round trip (native), its interval
    (paired t over the runs' own quantiles), the expected 2 x delay, and the excess (the
    emulator)."""
    rows: list[dict] = []
    if (Path(raw_dir) / "skipped.json").exists():
        return pd.DataFrame(rows, columns=COLUMNS)
    for delay in delays_ms:
        cells = latency_analysis.load_cells(Path(raw_dir) / label(delay), "latency", METRICS)
        for variant in METRICS:
            internet = _cell(cells, "internet", variant)
            dc = _cell(cells, "dc", variant)
            if internet is None or dc is None:
                continue
            shift = stats.quantile_shift_ci(
                internet, dc, QUANTILES, confidence=confidence
            )
            expected_us = 2 * delay * 1000
            for r in shift.itertuples():
                rows.append(
                    {
                        "delay_ms": delay,
                        "variant": variant,
                        "q": r.q,
                        "expected_added_us": expected_us,
                        "added_us": r.shift,
                        "added_lo_us": r.lo,
                        "added_hi_us": r.hi,
                        "excess_us": r.shift - expected_us,
                        "excess_lo_us": r.lo - expected_us,
                        "excess_hi_us": r.hi - expected_us,
                        "n_runs": r.n_runs,
                    }
                )
    return pd.DataFrame(rows, columns=COLUMNS)


def delay_added(
    raw_dir: str | Path,
    delays_ms: list[float],
    confidence: float = 0.95,
) -> pd.DataFrame:
    """What the configured delay alone adds: the Internet path's round trip at each delay minus
    the same path's at delay 0, so the emulator's own cost (its forwarding hop, measured at
    delay 0) cancels and the result should be 2 x the one-way delay. The delays are separate
    campaigns, so their runs are not paired: Welch intervals (``paired=False``). Empty when
    delay 0 was not calibrated. Columns: those of ``summarise`` without the excess."""
    columns = COLUMNS[: COLUMNS.index("excess_us")] + ["n_runs"]
    if (Path(raw_dir) / "skipped.json").exists() or 0 not in [float(d) for d in delays_ms]:
        return pd.DataFrame([], columns=columns)
    zero = latency_analysis.load_cells(Path(raw_dir) / label(0), "latency", METRICS)
    rows: list[dict] = []
    for delay in [d for d in delays_ms if float(d) > 0]:
        cells = latency_analysis.load_cells(Path(raw_dir) / label(delay), "latency", METRICS)
        for variant in METRICS:
            at_delay, at_zero = _cell(cells, "internet", variant), _cell(zero, "internet", variant)
            if at_delay is None or at_zero is None:
                continue
            shift = stats.quantile_shift_ci(
                at_delay, at_zero, QUANTILES, confidence, paired=False
            )
            rows += [
                {"delay_ms": delay, "variant": variant, "q": r.q,
                 "expected_added_us": 2 * delay * 1000, "added_us": r.shift,
                 "added_lo_us": r.lo, "added_hi_us": r.hi, "n_runs": r.n_runs}  # fmt: skip
                for r in shift.itertuples()
            ]
    return pd.DataFrame(rows, columns=columns)


def skipped_reason(raw_dir: str | Path) -> str | None:
    marker = Path(raw_dir) / "skipped.json"
    return json.loads(marker.read_text())["reason"] if marker.exists() else None


def _cell(cells: dict, path: str, variant: str) -> stats.RunSamples | None:
    """The native cell of a path and variant (the calibration has one environment)."""
    for (_, mode, cell_path, cell_variant), samples in cells.items():
        if (mode, cell_path, cell_variant) == ("native", path, variant):
            return samples
    return None


NO_INTERVAL = "(one run: no interval)"


def _interval(lo: float, hi: float, scale: float = 1.0, digits: int = 0) -> str:
    """``[lo, hi]`` in ``scale`` units, or what stands for it when one run gave none."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return NO_INTERVAL
    return f"[{lo / scale:,.{digits}f}, {hi / scale:,.{digits}f}]"


def article_table(summary: pd.DataFrame) -> pd.DataFrame:
    def ci(point: float, lo: float, hi: float) -> str:
        return f"{point:,.0f} {_interval(lo, hi)}"

    return pd.DataFrame(
        {
            "One-way delay (ms)": summary["delay_ms"].map("{:g}".format),
            "Protocol": summary["variant"].str.upper(),
            "Quantile": summary["q"].map(lambda q: f"p{q * 100:g}"),
            "Expected added RTT (us)": summary["expected_added_us"].map("{:,.0f}".format),
            "Measured added RTT (us) [95% CI]": [
                ci(r.added_us, r.added_lo_us, r.added_hi_us) for r in summary.itertuples()
            ],
            "Emulator excess (us) [95% CI]": [
                ci(r.excess_us, r.excess_lo_us, r.excess_hi_us) for r in summary.itertuples()
            ],
            "Runs": summary["n_runs"],
        }
    )


def sentence(summary: pd.DataFrame) -> str:
    """A generated statement of the emulator's own cost and of its delay accuracy."""
    parts = []
    zero = summary[(summary.delay_ms == 0) & (summary.variant == "udp")]
    if not zero.empty:
        p50 = zero[zero.q == 0.5].iloc[0]
        p99 = zero[zero.q == 0.99].iloc[0]
        parts.append(
            f"With no configured delay the emulated path adds {p50.added_us:,.0f} us at the "
            f"median {_interval(p50.added_lo_us, p50.added_hi_us)} and {p99.added_us:,.0f} us "
            f"at p99 {_interval(p99.added_lo_us, p99.added_hi_us)} to a UDP round trip."
        )
    for delay in sorted(set(summary.delay_ms) - {0}):
        row = summary[(summary.delay_ms == delay) & (summary.variant == "udp") & (summary.q == 0.5)]
        if row.empty:
            continue
        r = row.iloc[0]
        interval = _interval(r.added_lo_us, r.added_hi_us, 1000, 2)
        if interval == NO_INTERVAL:
            verdict = "with no interval, no test of the difference."
        elif r.added_lo_us <= r.expected_added_us <= r.added_hi_us:
            verdict = "the configured delay is inside the interval."
        else:
            verdict = f"{r.excess_us:,.0f} us more than configured, the emulator's own cost."
        measured = f"{r.added_us / 1000:,.2f} ms"
        parts.append(
            f"With {delay:g} ms configured each way the median round trip grows by {measured} "
            f"{interval} against {r.expected_added_us / 1000:,.2f} ms expected: {verdict}"
        )
    return " ".join(parts) or "No calibration data."
