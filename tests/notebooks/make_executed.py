"""Regenerate the executed fixture copies of the analysis notebooks (committed WITH outputs).

    python tests/notebooks/make_executed.py            # all of them
    python tests/notebooks/make_executed.py latency    # only those named (keys of NOTEBOOKS)

nbval re-executes that copy and compares the cells marked ``# NBVAL_CHECK_OUTPUT`` with the
outputs stored here, so regenerate it (and review the diff) whenever the notebook, the fixture
or the statistics change on purpose. ``test_executed_copy_matches_source`` fails until you do.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import papermill

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "notebooks" / "analysis" / "20-summarise-throughput.ipynb"
EXECUTED = ROOT / "tests" / "notebooks" / "20-summarise-throughput.fixture.ipynb"
# Relative to the repository root (the notebook resolves them there). The outputs go under
# reports/executed/, which git ignores, so re-running the copy leaves the tree clean.
OUT = "reports/executed/fixture/throughput"
PARAMETERS = {
    "raw_dir": "tests/fixtures/raw",
    "processed_dir": f"{OUT}/processed",
    "figures_dir": f"{OUT}/figures",
    "tables_dir": f"{OUT}/tables",
    "confidence": 0.95,
    "margin": 0.05,
    "multiplicity": "holm",
    "udp_loss_margin": 0.005,
}


def _fixture_parameters(stem: str, **extra) -> dict:
    out = f"reports/executed/fixture/{stem}"
    return {
        "raw_dir": "tests/fixtures/raw",
        "processed_dir": f"{out}/processed",
        "figures_dir": f"{out}/figures",
        "tables_dir": f"{out}/tables",
        "confidence": 0.95,
        **extra,
    }


# name -> (source notebook, executed copy, parameters); the throughput entry is the one above.
NOTEBOOKS: dict[str, tuple[Path, Path, dict]] = {
    "throughput": (SOURCE, EXECUTED, PARAMETERS),
    "latency": (
        ROOT / "notebooks" / "analysis" / "21-summarise-latency.ipynb",
        ROOT / "tests" / "notebooks" / "21-summarise-latency.fixture.ipynb",
        _fixture_parameters("latency", margin=0.05, multiplicity="holm",
                            internet_margin_us=100.0),
    ),
    "http": (
        ROOT / "notebooks" / "analysis" / "22-summarise-http.ipynb",
        ROOT / "tests" / "notebooks" / "22-summarise-http.fixture.ipynb",
        _fixture_parameters("http", margin=0.05, multiplicity="holm",
                            internet_margin_us=100.0),
    ),
    "internet_vs_dc": (
        ROOT / "notebooks" / "analysis" / "23-compare-internet-datacenter.ipynb",
        ROOT / "tests" / "notebooks" / "23-compare-internet-datacenter.fixture.ipynb",
        _fixture_parameters("internet_vs_dc", n_sim=40, seed=20261121),
    ),
    # One notebook for every host benchmark, parameterised by `benchmark`.
    **{
        f"host_{benchmark}": (
            ROOT / "notebooks" / "analysis" / "26-summarise-host.ipynb",
            ROOT / "tests" / "notebooks" / f"26-summarise-host-{benchmark}.fixture.ipynb",
            {
                "benchmark": benchmark,
                **_fixture_parameters(benchmark, margin=0.02, multiplicity="holm"),
            },
        )
        for benchmark in ("cpu", "memory")
    },
    # Cold start and load balancing (tests/fixtures/make_fixture_coldstart_lb.py's fixture).
    "coldstart": (
        ROOT / "notebooks" / "analysis" / "27-summarise-coldstart.ipynb",
        ROOT / "tests" / "notebooks" / "27-summarise-coldstart.fixture.ipynb",
        _fixture_parameters("coldstart", multiplicity="holm"),
    ),
    "lb": (
        ROOT / "notebooks" / "analysis" / "31-summarise-lb.ipynb",
        ROOT / "tests" / "notebooks" / "31-summarise-lb.fixture.ipynb",
        _fixture_parameters("lb", multiplicity="holm"),
    ),
    # Footprint + density, and orchestration (tests/fixtures/make_fixture_scaling.py's fixture).
    "footprint": (
        ROOT / "notebooks" / "analysis" / "28-summarise-footprint.ipynb",
        ROOT / "tests" / "notebooks" / "28-summarise-footprint.fixture.ipynb",
        _fixture_parameters("footprint", predict_at=100),
    ),
    "orchestration": (
        ROOT / "notebooks" / "analysis" / "30-summarise-orchestration.ipynb",
        ROOT / "tests" / "notebooks" / "30-summarise-orchestration.fixture.ipynb",
        _fixture_parameters("orchestration"),
    ),
    # The instrument check (tests/fixtures/make_fixture_instrument.py's fixture); no WAN
    # calibration data beside it, so no delay row.
    "instrument": (
        ROOT / "notebooks" / "analysis" / "29-check-instrument.ipynb",
        ROOT / "tests" / "notebooks" / "29-check-instrument.fixture.ipynb",
        _fixture_parameters("instrument", raw_dir="tests/fixtures/raw/instrument",
                            wan_raw_dir="reports/executed/fixture/instrument/no-wan"),
    ),
    # Run-to-run noise of every benchmark in the raw fixture, and its interference watch.
    "noise": (
        ROOT / "notebooks" / "analysis" / "32-summarise-noise.ipynb",
        ROOT / "tests" / "notebooks" / "32-summarise-noise.fixture.ipynb",
        _fixture_parameters("noise", n_sim=20, seed=20261121),
    ),
    # Reads processed summaries, not raw data: the committed tests/fixtures/processed (written
    # by tests/fixtures/make_processed.py from notebooks 20-22 and 26 on the raw fixture).
    "replication": (
        ROOT / "notebooks" / "analysis" / "25-replicate-articles.ipynb",
        ROOT / "tests" / "notebooks" / "25-replicate-articles.fixture.ipynb",
        {
            "published_csv": "data/reference/published.csv",
            "processed_dir": "tests/fixtures/processed",
            "tables_dir": "reports/executed/fixture/replication/tables",
            "confidence": 0.95,
        },
    ),
}


def execute(source: Path = SOURCE, output: Path = EXECUTED, parameters: dict | None = None) -> Path:
    papermill.execute_notebook(
        str(source),
        str(output),
        parameters=PARAMETERS if parameters is None else parameters,
        kernel_name="python3",
        cwd=str(ROOT),
        progress_bar=False,
    )
    nb = nbformat.read(output, as_version=4)
    # Timings change on every run; dropping them keeps regenerations diff-free where nothing
    # else changed.
    nb.metadata.get("papermill", {}).update(start_time=None, end_time=None, duration=None)
    for cell in nb.cells:
        if "injected-parameters" in cell.metadata.get("tags", []):
            cell.id = "injected-parameters"  # papermill draws a random id
            cell.source = cell.source.rstrip()  # its trailing blank line upsets ruff format
        cell.metadata.pop("papermill", None)
        cell.metadata.get("execution", {}).clear()
        cell.metadata.pop("execution", None)
    nbformat.write(nb, output)
    return output


if __name__ == "__main__":
    import sys

    for name in sys.argv[1:] or list(NOTEBOOKS):
        print(execute(*NOTEBOOKS[name]))
