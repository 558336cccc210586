"""What the benchmark tests on the embedded lab share: they need root, collect one campaign into
a temporary directory through `pipeline.campaign.collect` (which brings the lab up), and check
that nothing the campaign created is left on any node."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pytest

from pipeline import inventory, schema
from pipeline.campaign import Profile, collect
from pipeline.inventory import Inventory
from pipeline.modes import MODES, Context
from pipeline.modes.base import leftovers
from pipeline.remote import Pool

INVENTORY = "inventory/lab.yaml"
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root")


def collect_on_lab(
    tmp_path_factory, benchmark: str, profile: Profile, seed: int, options: dict | None = None
) -> tuple[pd.DataFrame, pd.DataFrame, Path]:
    """One campaign of ``benchmark`` on the lab: its runs, its samples and its directory."""
    raw = tmp_path_factory.mktemp("raw")
    started = time.monotonic()
    collect(benchmark, INVENTORY, raw, profile, seed=seed, options=options)
    print(f"collected {benchmark} in {time.monotonic() - started:.0f} s")
    root = raw / benchmark / "lab"
    return (
        pd.read_parquet(root / "runs.parquet"),
        schema.read_samples(root / "samples.parquet"),
        root,
    )


@contextmanager
def lab_session() -> Iterator[tuple[Inventory, Pool, Context]]:
    """SSH sessions to the lab's hosts, and a Context for the modes' helpers."""
    inv = inventory.load(INVENTORY, known_modes=MODES)
    with Pool(inv) as pool:
        yield inv, pool, Context(inventory=inv, pool=pool, campaign="check")


def ctrl_c_reaches_the_child() -> None:
    """Popen's preexec_fn for a child the test interrupts as Ctrl-C would: SIGINT back to its
    default. A shell starts background jobs with SIGINT ignored and the child inherits that (a
    Python child then never raises KeyboardInterrupt), so a suite launched in the background
    could not interrupt anything without this."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def assert_nothing_left() -> None:
    """No labelled container, network, service, volume, pidfile or test directory on any host."""
    with lab_session() as (inv, _, ctx):
        for host in (*inv.servers, inv.dc_client):
            assert leftovers(ctx, host) == [], host.name
