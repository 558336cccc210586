"""A stage's kernel (``pipeline.stages.start_kernel``: started first, the notebook's modules
preloaded) writes what a kernel papermill starts itself writes, file for file, on the fixture."""

from __future__ import annotations

import notebook_checks as nc
import papermill
from jupyter_core.utils import run_sync

from pipeline import stages

NOTEBOOK = nc.ANALYSIS / "31-summarise-lb.ipynb"


def _run(out, km=None) -> dict[str, bytes]:
    out.mkdir()
    dirs = {d: out / d for d in nc.OUTPUT_DIRS}
    papermill.execute_notebook(
        str(NOTEBOOK),
        str(out / "executed.ipynb"),
        parameters={"raw_dir": str(nc.FIXTURE), **{f"{d}_dir": str(p) for d, p in dirs.items()},
                    "confidence": 0.95, "multiplicity": "holm"},  # fmt: skip
        cwd=str(nc.ROOT),
        progress_bar=False,
        **({"km": km} if km is not None else {"kernel_name": "python3"}),
    )
    return {str(p.relative_to(out)): p.read_bytes() for d in dirs.values()
            for p in sorted(d.rglob("*")) if p.is_file()}  # fmt: skip


def test_stage_kernel_writes_what_papermills_own_kernel_writes(tmp_path):
    plain = _run(tmp_path / "plain")
    km = stages.start_kernel(NOTEBOOK)
    try:
        staged = _run(tmp_path / "stage", km)
    finally:
        run_sync(km.shutdown_kernel)(now=True)
    assert sorted(staged) == sorted(plain) and any(p.endswith(".csv") for p in plain)
    assert [p for p in plain if staged[p] != plain[p]] == []
