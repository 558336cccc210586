"""Which is larger on a path, the mode differences or the run-to-run variation: decided only
where the two intervals part (``network.larger``), and the answer table built from it."""

import pandas as pd

from pipeline.analysis import network

ROW = {"environment": "lab", "path": "internet", "variant": "udp", "statistic": "p99",
       "status": "ok", "reason": "", "mode_range": 300.0, "mode_range_lo": 150.0,
       "mode_range_hi": 770.0, "sd_within": 1480.0, "sd_within_lo": 435.0,
       "sd_within_hi": 2760.0, "confidence": 0.95}  # fmt: skip


def _row(**changed) -> object:
    return next(pd.DataFrame([{**ROW, **changed}]).itertuples())


def test_overlapping_intervals_leave_which_is_larger_not_resolved():
    assert network.larger(_row()) == "not resolved (run to run 4.9x)"
    assert network.larger(_row(sd_within_lo=800.0)) == "run to run, 4.9x"
    assert network.larger(_row(mode_range=30.0, mode_range_lo=20.0, mode_range_hi=40.0,
                               sd_within=1.0, sd_within_lo=0.5, sd_within_hi=2.0)) == "modes, 30x"
    assert network.larger(_row(status="failed")) is None


def test_the_answer_is_one_table_with_the_internet_paths_own_cost():
    components = pd.DataFrame([{**ROW, "path": "dc", "mode_range": 2.0, "mode_range_lo": 1.8,
                                "mode_range_hi": 2.2, "sd_within": 0.2, "sd_within_lo": 0.1,
                                "sd_within_hi": 0.3}, ROW])  # fmt: skip
    paths = pd.DataFrame({"environment": "lab", "variant": "udp", "statistic": "p99",
                          "path": ["dc", "internet"], "native_median_us": [14.0, 48_000.0]})
    text = network.answer(components, paths)
    lines = text.splitlines()
    assert lines[0].startswith("Table: On each path") and lines[1] == ""
    assert lines[2].startswith("| Variant |") and len(lines) == 6  # head, rule, two rows
    assert lines[4] == ("| `udp` | p99 | datacenter | 2.00 us [1.80 us, 2.20 us] "
                        "| 0.20 us [0.10 us, 0.30 us] | modes, 10x | 14.0 us |")
    assert lines[5].endswith("| not resolved (run to run 4.9x) | 48.00 ms (+47.99 ms) |")
    unfitted = network.answer(components.assign(status="failed", reason="too few runs"), paths)
    assert unfitted.count("not fitted: too few runs") == 2 and "n/a" in unfitted
