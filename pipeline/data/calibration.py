"""The WAN calibration's datasets: one campaign per configured one-way delay, each under its own
directory (``data/raw/wan_calibration/<label>/``), written by ``pipeline.collect.calibration``
and read by ``pipeline.analysis.calibration``."""

from __future__ import annotations


def label(delay_ms: float) -> str:
    """The directory of the calibration campaign at one-way delay ``delay_ms``."""
    return f"delay_{delay_ms:g}ms"
