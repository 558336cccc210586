"""The WAN emulator's calibration runs: native latency at each configured one-way delay (jitter
and loss off) on the dc and Internet paths (``pipeline.analysis.calibration`` reads them)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from pipeline.collect import campaign, inventory
from pipeline.collect.modes import MODES
from pipeline.data.calibration import label


def collect(
    inventory_file: str | Path,
    raw_dir: str | Path,
    delays_ms: list[float],
    profile: campaign.Profile,
    seed: int,
    wan: dict,
    log: Callable[[str], None] = print,
    provider: campaign.Provider | None = None,
    variants: tuple[str, ...] | None = None,
) -> dict[str, dict[str, int]]:
    """One native latency campaign per configured delay, dc and Internet paths, in ``variants``
    (udp, tcp; default both); the lab's WAN profile is put back to ``wan`` afterwards. Only
    the embedded lab has an emulator to calibrate: for real hosts the reason is written
    instead of data."""
    raw = Path(raw_dir)
    inv = inventory.load(inventory_file, known_modes=MODES, check_files=False)
    if provider is None or not inv.lab:
        raw.mkdir(parents=True, exist_ok=True)
        reason = f"{inv.environment} is not the embedded lab: its Internet path is not emulated"
        (raw / "skipped.json").write_text(json.dumps({"reason": reason}))
        log(reason)
        return {}
    counts = {}
    try:
        for delay in delays_ms:
            log(f"WAN calibration: one-way delay {delay:g} ms, no jitter, no loss")
            calibrated = {**wan, "delay_ms": float(delay), "jitter_ms": 0.0, "loss_pct": 0.0}
            counts[label(delay)] = campaign.collect(
                "latency", inventory_file, raw / label(delay), profile, seed, ["native"],
                calibrated, log, paths=("dc", "internet"), provider=provider, variants=variants,
            )  # fmt: skip
    finally:
        provider.ready(wan, log)
    return counts
