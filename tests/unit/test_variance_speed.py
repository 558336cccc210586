"""The fast paths of the analysis give the numbers of the plain ones, bit for bit.

- the mixed model's fits (``stats.variance_components_each``: pipeline.analysis.mixed's MixedLM,
  each covariance's per-group solves done once, the parts shared out over processes) against a
  loop of plain statsmodels MixedLM fits;
- the noise and Internet-vs-datacenter outputs on the raw fixture against the committed
  full-precision reference (tests/fixtures/variance, written by make_variance.py), to within
  what other releases of the numerical libraries change (``_differences``);
- a saved figure's SVG and PNG against vl-convert's own Vega-Lite renderers.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd
import pytest

from pipeline.analysis import figures, noise, stats

ROOT = Path(__file__).resolve().parents[2]


def _make_variance():
    path = ROOT / "tests" / "fixtures" / "make_variance.py"
    spec = importlib.util.spec_from_file_location("make_variance", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _same(a, b) -> bool:
    """Equal, NaN equal to NaN, floats compared bit for bit."""
    if isinstance(a, float) and isinstance(b, float):
        return np.float64(a).tobytes() == np.float64(b).tobytes()
    return a == b


@pytest.fixture(scope="module")
def parts() -> list[pd.DataFrame]:
    values = noise.per_run_values(_make_variance().RAW)
    return [part for _, part in values.groupby(noise.KEYS, sort=False)]


def test_fits_equal_a_loop_of_plain_statsmodels_fits(parts, monkeypatch):
    from statsmodels.regression.mixed_linear_model import MixedLM

    chosen = parts[:4]
    with monkeypatch.context() as patch:
        patch.setattr(stats, "_mixed_lm", lambda: MixedLM)
        plain = [stats.variance_components(p, "native", 0.95, 10, 7) for p in chosen]
    fast = stats.variance_components_each(chosen, "native", 0.95, 10, 7)
    assert len(fast) == len(plain)
    for a, b in zip(plain, fast, strict=True):
        assert a.status == "ok" and a.n_sim_ok > 0
        for field in dataclasses.fields(a):
            if field.name == "effects":
                pd.testing.assert_frame_equal(a.effects, b.effects, check_exact=True)
            else:
                x, y = getattr(a, field.name), getattr(b, field.name)
                assert _same(x, y), (field.name, x, y)


def test_fits_keep_the_parts_order(parts):
    one = [stats.variance_components(p, "native", 0.95, 5, 1) for p in parts[:3]]
    each = stats.variance_components_each(parts[:3], "native", 0.95, 5, 1)
    assert [vc.sd_within for vc in each] == [vc.sd_within for vc in one]


def _differences(frame: pd.DataFrame, reference: pd.DataFrame) -> list[str]:
    """Where ``frame`` departs from ``reference``: every value equal (floats within 1e-6 of
    their own size), but an interval bound (``x_lo``, ``x_hi``) within 0.1% of its estimate
    ``x``. The reference was written with other releases of NumPy, SciPy and statsmodels, whose
    last bits differ; a bootstrap refit at the variance boundary (a lower bound near zero)
    moves by more than its size then, never by more than a sliver of the estimate."""
    found = []
    assert list(frame.columns) == list(reference.columns) and len(frame) == len(reference)
    for column in frame.columns:
        a, b = frame[column], reference[column]
        if not pd.api.types.is_float_dtype(b):
            if not a.equals(b):
                found.append(column)
            continue
        x, y = a.to_numpy(float), b.to_numpy(float)
        allowed = 1e-6 * np.abs(y)
        base = column.removesuffix("_lo").removesuffix("_hi")
        if base != column and base in reference:
            allowed = np.maximum(allowed, 1e-3 * np.abs(reference[base].to_numpy(float)))
        same = (np.isnan(x) & np.isnan(y)) | (np.abs(x - y) <= allowed)
        if not same.all():
            found.append(f"{column} rows {np.flatnonzero(~same).tolist()}")
    return found


def test_mixed_model_outputs_match_the_committed_reference():
    module = _make_variance()
    for stem, frame in module.outputs().items():
        reference = pd.read_parquet(module.OUT / f"{stem}.parquet")
        assert not _differences(frame.reset_index(drop=True), reference), stem


def test_the_reference_comparison_catches_a_changed_value():
    reference = pd.DataFrame({"sd": [2.0, 80.0], "sd_lo": [1e-6, 0.0066], "n": [3, 3]})
    assert not _differences(reference.assign(sd_lo=[2e-6, 0.0091]), reference)  # boundary
    assert _differences(reference.assign(sd=[2.0, 80.01]), reference) == ["sd rows [1]"]
    assert _differences(reference.assign(sd_lo=[0.01, 0.0066]), reference) == ["sd_lo rows [0]"]
    assert _differences(reference.assign(n=[3, 4]), reference) == ["n"]


def test_saved_figure_is_what_vl_convert_renders_from_vega_lite(tmp_path):
    import vl_convert as vlc

    data = pd.DataFrame({"mode": ["native", "docker-bridge"], "ratio": [1.0, 0.93]})
    chart = (
        alt.Chart(data)
        .mark_point()
        .encode(
            x="ratio:Q",
            y="mode:N",
            color=alt.Color("mode:N", scale=figures.mode_scale(data["mode"])),
        )
    )
    svg, png, html, spec = figures.save(chart, tmp_path, "check")
    vega_lite = json.loads(spec.read_text())
    assert svg.read_text(encoding="utf-8") == vlc.vegalite_to_svg(vega_lite)
    assert png.read_bytes() == vlc.vegalite_to_png(vega_lite, scale=2)
    page = html.read_text(encoding="utf-8")  # the interactive page embeds the same spec
    embedded = page.split("const spec = ", 1)[1].split(";\n", 1)[0]
    assert json.loads(embedded) == vega_lite


@pytest.mark.filterwarnings("ignore:The MLE may be on the boundary")
def test_mixed_lm_fits_as_statsmodels_with_a_random_slope_too():
    from statsmodels.regression.mixed_linear_model import MixedLM as Plain

    from pipeline.analysis.mixed import MixedLM

    rng = np.random.default_rng(3)
    groups = np.repeat(np.arange(8), 5)
    x = np.column_stack([np.ones(40), rng.normal(size=40)])
    y = x @ [1.0, 0.5] + rng.normal(size=8)[groups] + rng.normal(size=40) * 0.3
    for exog_re in (None, x):  # a random intercept; a random intercept and slope
        plain = Plain(y, x, groups=groups, exog_re=exog_re).fit(reml=True)
        fast = MixedLM(y, x, groups=groups, exog_re=exog_re).fit(reml=True)
        assert plain.params.tobytes() == fast.params.tobytes()
        assert plain.bse.tobytes() == fast.bse.tobytes()
        assert np.asarray(plain.cov_re).tobytes() == np.asarray(fast.cov_re).tobytes()
