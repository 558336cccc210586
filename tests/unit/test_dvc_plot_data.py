"""The tidy CSVs dvc.yaml's data plots read: latency's ECDF (latency.write_ecdf) on samples with
known quantiles, and every plot's fields in what the summaries write (the committed processed
fixture), so `dvc plots` finds its columns."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from pipeline.analysis import latency, stats

ROOT = Path(__file__).resolve().parents[2]
PROCESSED_FIXTURE = ROOT / "tests" / "fixtures" / "processed"


def test_the_latency_ecdf_csv_holds_the_pooled_quantiles(tmp_path):
    # 1..1000 µs over two runs: the pooled inverted-CDF quantile at p is ceil(1000 p)
    values = np.arange(1, 1001, dtype=float)
    cell = stats.RunSamples.from_arrays(values, np.arange(1000) % 2 + 1)
    ecdf = latency.ecdf_frame({("lab", "native", "dc", "udp"): cell})
    path = latency.write_ecdf(ecdf, tmp_path / "processed", "latency")
    assert path == tmp_path / "processed" / "latency_ecdf.csv"
    written = pd.read_csv(path)
    assert list(written.columns) == ["environment", "mode", "path", "variant", "p", "value_us"]
    assert len(written) == 103  # 100 levels from 0.005 to 0.995, then 99.9, 99.95, 99.99
    known = {0.005: 5.0, 0.505: 505.0, 0.995: 995.0, 0.999: 999.0, 0.9999: 1000.0}
    at = written.set_index("p")["value_us"]
    for p, value in known.items():
        assert at[np.isclose(at.index, p)].tolist() == [value], p
    # an ECDF: at least the fraction p of the samples lie at or below each point
    assert all((values <= v).mean() >= p for p, v in at.items())
    assert at.is_monotonic_increasing


def _data_plots() -> dict[str, dict]:
    plots = yaml.safe_load((ROOT / "dvc.yaml").read_text())["plots"]
    return {k: v for entry in plots if isinstance(entry, dict) for k, v in entry.items()}


def test_every_data_plot_has_its_template_and_reads_columns_the_summary_writes():
    checked = []
    for name, spec in _data_plots().items():
        template = ROOT / ".dvc" / "plots" / f"{spec['template']}.json"
        assert "<DVC_METRIC_DATA>" in json.dumps(json.loads(template.read_text())), name
        ((path, fields),) = spec["y"].items()
        fields = [fields] if isinstance(fields, str) else fields
        assert path.startswith("data/processed/") and path.endswith(".csv"), name
        fixture = PROCESSED_FIXTURE / Path(path).relative_to("data/processed")
        if not fixture.is_file():  # no processed fixture for this summary (or the ECDF above)
            continue
        columns = set(pd.read_csv(fixture, nrows=0).columns)
        needed = {spec["x"], *fields, "mode", "path"}
        if spec["template"] == "ratio_interval":  # the interval's ends
            needed |= {f"{spec['x']}_lo", f"{spec['x']}_hi"}
        else:  # a panel per path and variant
            needed |= {"variant"}
        assert needed <= columns, (name, sorted(needed - columns))
        checked.append(name)
    # throughput, latency, http, cpu, memory, coldstart (two), lb: their fixtures exist
    assert len(checked) >= 8, checked
