"""What the lab benches (perturbation, placement) share: their cases, the lab, its inventory."""

from __future__ import annotations

import argparse

from bench._proc import ROOT
from pipeline import inventory, lab
from pipeline.modes import MODES

INVENTORY = ROOT / "inventory" / "lab.yaml"


def cases_on_the_lab(
    parser: argparse.ArgumentParser, chosen: str, cases: dict
) -> tuple[list[str], inventory.Inventory]:
    """The comma-separated ``chosen`` cases (an unknown one is a usage error), with the
    embedded lab up (brought up if it is down) and its inventory."""
    names = chosen.split(",")
    if unknown := set(names) - set(cases):
        parser.error(f"unknown case(s) {sorted(unknown)}; have {', '.join(cases)}")
    lab.up()
    return names, inventory.load(INVENTORY, known_modes=MODES)
