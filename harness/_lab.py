"""What the lab benches (perturbation, placement) share: their cases, the lab, its inventory,
a campaign's measured samples."""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from harness._proc import ROOT
from pipeline import lab
from pipeline.benchmarks import Benchmark
from pipeline.benchmarks.latency import Latency
from pipeline.collect import inventory
from pipeline.collect.campaign import Campaign, Profile, upload
from pipeline.collect.modes import MODES
from pipeline.collect.remote import Pool
from pipeline.data import schema
from pipeline.lab import cpus

INVENTORY = ROOT / "inventory" / "lab.yaml"


def cases_on_the_lab(
    parser: argparse.ArgumentParser, chosen: str, cases: dict
) -> tuple[list[str], inventory.Inventory]:
    """The comma-separated ``chosen`` cases (an unknown one is a usage error), with the
    embedded lab up (brought up if it is down) and its inventory."""
    names = chosen.split(",")
    if unknown := set(names) - set(cases):
        parser.error(f"unknown case(s) {sorted(unknown)}; have {', '.join(cases)}")
    return names, lab_inventory()


def lab_inventory() -> inventory.Inventory:
    """The embedded lab's inventory, the lab up (brought up if it is down) and the latency
    benchmark's sockperf on every host, as a campaign ships it: the by-hand arms run it too."""
    lab.up()
    inv = inventory.load(INVENTORY, known_modes=MODES)
    with Pool(inv) as pool:
        upload(pool, list(inv.all_hosts()), Latency.uploads)
    return inv


def one_variant(cls: type[Benchmark], variant: str) -> Benchmark:
    """An instance of ``cls`` that measures ``variant`` only; the class is untouched."""
    bench = cls()
    bench.variants = (variant,)
    return bench


def measured_samples(
    bench: Benchmark, inv: inventory.Inventory, profile: Profile, out: Path, seed: int,
    modes: list[str], metric: str, placement: str,
) -> pd.DataFrame:  # fmt: skip
    """Run one campaign on the dc path into ``out``; its measured (not warm-up) samples of
    ``metric``. A failed step fails the bench: a comparison with a hole is no comparison."""
    Campaign(bench, inv, profile, out, seed, modes, lambda _: None, ("dc",),
             placement=placement, placer=cpus.place).run()  # fmt: skip
    runs = pq.read_table(out / "runs.parquet").to_pandas()
    failed = runs[runs["status"] != "ok"]
    if len(failed):
        reasons = failed[["mode", "status", "reason"]].to_dict("records")
        raise RuntimeError(f"{bench.name} campaign under {placement}: steps failed: {reasons}")
    samples = schema.read_samples(out / "samples.parquet")
    return samples[(~samples["warmup"]) & (samples["metric"] == metric)]
