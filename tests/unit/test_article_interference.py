"""The article's interference paragraph says what the re-measurement did, from the noise
stage's interference summary: windows measured again and windows kept flagged, as counted."""

from __future__ import annotations

import importlib
from pathlib import Path

import pandas as pd

from pipeline.analysis.article.numbers import Numbers

# the module (the package exports a function of the same name)
methods = importlib.import_module("pipeline.analysis.article.methods")


class _Inputs:
    def __init__(self, frame: pd.DataFrame, path: Path) -> None:
        self.found = (frame, path)

    def summary(self, benchmark: str, name: str):
        return self.found if (benchmark, name) == ("noise", "interference_summary") else None


def _paragraph(frame: pd.DataFrame, tmp_path: Path, monkeypatch) -> str:
    monkeypatch.setattr(methods, "figure_blocks", lambda *a, **k: [])
    monkeypatch.setattr(methods, "tables_for", lambda *a, **k: [])
    path = tmp_path / "interference_summary.parquet"
    return methods._interference(_Inputs(frame, path), Numbers(tmp_path))[0]


def test_the_paragraph_counts_windows_measured_again_and_kept_flagged(tmp_path, monkeypatch):
    frame = pd.DataFrame({"windows": [40, 20], "flagged": [5, 1], "remeasured": [4, 1],
                          "kept_flagged": [1, 0], "beside_flagged": ["co-busy-loop", ""]})
    text = _paragraph(frame, tmp_path, monkeypatch)
    assert "6 of 60 measured windows were flagged" in text
    assert "measured again later in its campaign (5 windows)" in text
    assert "1 flagged windows stayed in the estimates" in text
    assert "co-busy-loop" in text


def test_campaigns_without_re_measurement_say_their_flagged_windows_stay(tmp_path, monkeypatch):
    frame = pd.DataFrame({"windows": [10], "flagged": [2], "beside_flagged": [""]})
    text = _paragraph(frame, tmp_path, monkeypatch)
    assert "recorded no re-measurement: their flagged windows stay in" in text
