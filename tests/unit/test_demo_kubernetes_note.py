"""`make demo` says once, first, how to get the Kubernetes modes where this machine lacks the
build and the profile plans them; nothing where the build is there or no mode needs it."""

from pathlib import Path

import pytest

from pipeline import demo, params
from pipeline.lab import kubernetes

ROOT = Path(__file__).resolve().parents[2]


def load(tmp_path: Path, profile: str) -> params.Params:
    text = (ROOT / "params.yaml").read_text()
    text = text.replace("\nprofile: demo\n", f"\nprofile: {profile}\n")
    assert f"\nprofile: {profile}\n" in text
    (tmp_path / "params.yaml").write_text(text)
    return params.load(tmp_path / "params.yaml", root=ROOT)


@pytest.fixture
def unbuilt(monkeypatch):
    monkeypatch.setattr(kubernetes, "missing_build", lambda: "not cached: run `make kubernetes`")


def test_the_demo_profile_names_the_campaigns_that_skip_kubernetes(tmp_path, unbuilt):
    note = demo.kubernetes_note(load(tmp_path, "demo"))
    assert note == (
        "Kubernetes modes: skipped in lb, orchestration (Kubernetes is not built on this "
        "machine); `make kubernetes` builds it once, in about 10 minutes.")


def test_no_note_where_the_build_is_cached(tmp_path, monkeypatch):
    monkeypatch.setattr(kubernetes, "missing_build", lambda: None)
    assert demo.kubernetes_note(load(tmp_path, "demo")) is None


def test_no_note_where_the_profile_plans_no_kubernetes_mode(tmp_path, unbuilt):
    # smoke leaves every Kubernetes mode out (its without_modes): nothing is skipped for want of it
    assert demo.kubernetes_note(load(tmp_path, "smoke")) is None


def test_no_note_without_a_lab_environment(tmp_path, unbuilt):
    p = load(tmp_path, "demo")
    p.raw["environments"] = {"bm": "inventory/example-hosts.yaml"}
    assert demo.kubernetes_note(p) is None


def test_the_run_prints_it_once_before_the_first_stage(tmp_path, unbuilt, monkeypatch):
    lines: list[str] = []
    monkeypatch.setattr(demo, "load", lambda: load(tmp_path, "demo"))
    assert demo.run(dvc="true", log=lambda line, **_: lines.append(line)) == 0
    assert lines[0].startswith("Kubernetes modes: skipped in lb, orchestration")
    assert lines[1].startswith("[stage 1/")
    assert sum("make kubernetes" in line for line in lines) == 1
