"""nbval on the executed fixture copy of the throughput notebook.

The copy (``20-summarise-throughput.fixture.ipynb``, committed with outputs) is re-executed by
nbval; the cells marked ``# NBVAL_CHECK_OUTPUT`` (the headline numbers and the article table)
must reproduce their stored output exactly. The copy must not drift from the source notebook.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import notebook_checks as nc
import pytest

SOURCE = nc.ANALYSIS / "20-summarise-throughput.ipynb"
EXECUTED = nc.HERE / "20-summarise-throughput.fixture.ipynb"


def test_executed_copy_matches_source():
    nc.assert_copy_matches_source(SOURCE, EXECUTED, "throughput")


def test_executed_copy_has_checked_headline_outputs():
    text = nc.headline_text(EXECUTED, n_cells=2)
    assert "lab docker-bridge dc: ok, 5 runs, median 8.200 Gbit/s [8.150, 8.300]" in text
    assert "lab swarm-ingress dc: skipped, n/a (skipped: kernel has no IPVS" in text
    assert "| Docker proxy (localhost) | localhost | 6.80 [6.65, 6.92] |" in text
    # Verdicts against the 5% margin (see test_summarise_throughput.KNOWN_VERDICTS).
    assert "lab docker-host dc: ok, 5 runs," in text
    assert "ratio 0.9985 [0.9929, 1.0042], verdict equivalent (90% [" in text
    assert "| equivalent (small overhead) |" in text  # macvlan, ~1% below native


def test_nbval_reproduces_headline_cells():
    nc.assert_nbval_passes(EXECUTED)


def _tampered(tmp_path) -> Path:
    """The copy with one stored headline number changed (8.200 Gbit/s -> 8.201)."""
    nb = nbformat.read(EXECUTED, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.source.startswith(nc.CHECKED):
            for out in cell.outputs:
                if "8.200 Gbit/s" in out.get("text", ""):
                    out["text"] = out["text"].replace("8.200 Gbit/s", "8.201 Gbit/s")
                    break
            else:
                continue
            break
    else:
        pytest.fail("headline cell with the docker-bridge median not found")
    tampered = tmp_path / EXECUTED.name
    nbformat.write(nb, tampered)
    return tampered


def test_nbval_catches_a_changed_number(tmp_path):
    # Negative control: the check must fail when a stored headline number is wrong.
    result = nc.run_nbval(_tampered(tmp_path))
    assert result.returncode != 0
    assert "8.201" in result.stdout


def test_the_fresh_run_comparison_catches_a_changed_number(tmp_path):
    """The other notebooks' tests compare their fixture's run with the copy
    (nc.assert_reproduces_copy): equal outputs pass, one changed digit fails."""
    nc.assert_reproduces_copy({"notebook": EXECUTED, "copy": EXECUTED})
    with pytest.raises(AssertionError, match="checked cell 0 differs"):
        nc.assert_reproduces_copy({"notebook": EXECUTED, "copy": _tampered(tmp_path)})
