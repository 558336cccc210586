"""The mode catalogue is the one place a mode is declared besides its behaviour module: every
registered mode has an entry and a capabilities row and nothing else does; the benchmarks,
the modes and the figures read it; a label or a colour stays out of the campaigns' code digest
while what a mode serves is in it; and a mode's name appears in no other file of the package."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import altair as alt
import pytest

from pipeline import capabilities, catalogue, imports
from pipeline.analysis import figures
from pipeline.benchmarks import BENCHMARKS
from pipeline.collect.campaign import code_digest
from pipeline.collect.modes import MODES, NETWORK_MODES, STUDY_MODES

ROOT = imports.ROOT


def test_every_registered_mode_has_one_entry_and_one_row_and_nothing_else_does():
    assert set(catalogue.CATALOGUE) == set(MODES)
    assert set(capabilities.SERVES) == set(MODES)
    assert len(catalogue.ENTRIES) == len(catalogue.CATALOGUE)  # no name twice
    assert {e.family for e in catalogue.ENTRIES} <= set(catalogue.FAMILIES)
    assert all(re.fullmatch(r"#[0-9a-f]{6}", e.colour) for e in catalogue.ENTRIES)


def test_a_mode_serves_what_its_row_says():
    for name, mode in MODES.items():
        row = capabilities.SERVES[name]
        assert (mode.paths, mode.control) == (row.paths, row.control), name
        assert catalogue.CATALOGUE[name].serves is row
    # as the modes declared them before the catalogue: the controls, and the three kinds of path
    assert [m for m in MODES if MODES[m].control] == ["native-aa", "native-cpuquota", "native-tbf",
                                                      "docker-cpuquota"]  # fmt: skip
    assert MODES["docker-proxy"].paths == ("local",)
    assert MODES["docker-overlay2"].paths == ("host",)
    assert MODES["native-aa"].paths == ("dc", "internet", "local", "host")
    assert "docker-overlay2" not in NETWORK_MODES and "native-tbf" not in STUDY_MODES


def test_a_mode_the_table_does_not_know_says_where_to_declare_it():
    from pipeline.collect.modes.base import Mode

    class Unlisted(Mode):
        name = "docker-unlisted"

    with pytest.raises(KeyError, match="pipeline/capabilities.py"):
        _ = Unlisted().paths


def test_host_and_scenario_benchmarks_run_in_the_modes_the_table_gives_them():
    named = {b for row in capabilities.SERVES.values() for b in row.benchmarks}
    assert named <= set(BENCHMARKS)
    for name, bench in BENCHMARKS.items():
        if bench.kind in ("host", "scenario"):
            assert bench.modes == capabilities.serving(name), name
            assert name in named, name
        else:
            assert name not in named, name
    # a known answer: the disk benchmark's storage modes, the runtimes' layers and the pod
    assert capabilities.serving("disk") == (
        "native", "docker-overlay2", "docker-bind", "docker-volume", "rootless-docker-layer",
        "podman-fuse-overlayfs", "docker-crun", "docker-gvisor", "k8s-pod")  # fmt: skip
    assert capabilities.serving("lb") == ("swarm-overlay", "k8s-pod")


def test_figures_take_label_colour_and_order_from_the_catalogue():
    ranked = [e.name for e in catalogue.ENTRIES if e.family != "control"]
    assert figures.MODE_ORDER == ranked
    assert figures.MODE_LABELS == {m: catalogue.CATALOGUE[m].label for m in ranked}
    assert figures.MODE_COLORS == {m: catalogue.CATALOGUE[m].colour for m in ranked}
    # the values the figures had when they declared them themselves
    assert figures.MODE_COLORS["docker-proxy"] == "#e6550d"
    assert figures.MODE_LABELS["k8s-clusterip"] == "Kubernetes ClusterIP Service (client pod)"
    assert figures.mode_rank("native") == 0 and figures.mode_rank("docker-host") == 1
    assert figures.mode_rank("native-tbf") == figures.mode_rank("unknown") == len(ranked)


def test_a_figure_colours_a_mode_as_its_entry_says(monkeypatch):
    recoloured = catalogue.Entry("docker-bridge", "Bridge", "#123456", "network driver")
    monkeypatch.setitem(catalogue.CATALOGUE, "docker-bridge", recoloured)
    scale = figures.mode_scale(["docker-bridge", "native", "native-aa", "no-such-mode"])
    assert scale.domain == ["native", "docker-bridge", "native-aa", "no-such-mode"]
    assert scale.range == ["#222222", "#123456", catalogue.UNKNOWN_COLOR, catalogue.UNKNOWN_COLOR]
    chart = alt.Chart().mark_point().encode(color=alt.Color("mode:N", scale=scale))
    assert chart.to_dict()["encoding"]["color"]["scale"]["range"][1] == "#123456"
    assert figures.mode_label("docker-bridge") == "Bridge"


def test_collection_never_imports_the_catalogue():
    collecting = [m for m in imports.package_modules()
                  if m.startswith(("pipeline.collect", "pipeline.benchmarks"))]  # fmt: skip
    reached = imports.closure(collecting)
    assert "pipeline.capabilities" in reached
    assert "pipeline.catalogue" not in reached


# ---- the code digest: what a mode serves is in it, how it looks is not ------------------------


@pytest.fixture
def digest_of(tmp_path, monkeypatch):
    """``digest_of(edit)``: the cpu campaign's code digest (all its modes) over a copy of the
    repository files it reads, after ``edit(path, text) -> text`` was applied to each of them
    and to the catalogue."""
    bench = BENCHMARKS["cpu"]()
    modes = list(capabilities.serving("cpu"))
    files = code_digest(bench, modes)["files"]
    module = sys.modules[code_digest.__module__]

    def digest(edit) -> str:
        copy = tmp_path / f"copy{len(list(tmp_path.iterdir()))}"
        for name in {*files, "pipeline/catalogue.py"}:
            target = copy / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / name, target)
            text = target.read_text()
            edited = edit(name, text)
            if edited != text:
                target.write_text(edited)
        monkeypatch.setattr(module, "ROOT", copy)
        return code_digest(bench, modes)["digest"]

    return digest


def _replace(file: str, old: str, new: str):
    def edit(name: str, text: str) -> str:
        if name != file:
            return text
        assert text.count(old) == 1, (file, old)
        return text.replace(old, new)

    return edit


def test_relabelling_or_recolouring_a_mode_leaves_the_digest_as_it_was(digest_of):
    before = digest_of(lambda name, text: text)
    assert digest_of(lambda name, text: text) == before  # the copy digests as the tree does
    relabel = _replace("pipeline/catalogue.py", '"Docker bridge", "#2171b5"',
                       '"The Docker bridge", "#000000"')  # fmt: skip
    assert digest_of(relabel) == before


def test_changing_what_a_mode_serves_changes_the_digest(digest_of):
    before = digest_of(lambda name, text: text)
    narrower = _replace("pipeline/capabilities.py", '"docker-host": Serves(("dc", "internet"))',
                        '"docker-host": Serves(("dc",))')  # fmt: skip
    assert digest_of(narrower) != before


# ---- a new mode: its behaviour module, its registry line, its row and its entry --------------

# Where a mode's name may appear as a string in the package: its row, its entry, its behaviour
# module (and the modes it shares code with), the lab that provides what it needs.
DECLARED = {"pipeline/capabilities.py", "pipeline/catalogue.py"}


def files_naming(mode: str) -> set[str]:
    pattern = re.compile(rf"""["']{re.escape(mode)}["']""")
    return {str(p.relative_to(ROOT)) for p in (ROOT / "pipeline").rglob("*.py")
            if pattern.search(p.read_text())}  # fmt: skip


def behaviour_module(mode: str) -> str:
    return f"pipeline/collect/modes/{type(MODES[mode]).__module__.rsplit('.', 1)[1]}.py"


# (Modes whose name is also an engine's, a driver's or an inventory key's, such as podman or
# macvlan, cannot be told apart by a search for the string and are left out.)
@pytest.mark.parametrize("mode", ["docker-crun", "docker-gvisor", "k8s-clusterip", "swarm-ingress",
                                  "swarm-overlay-mtu", "docker-volume"])  # fmt: skip
def test_a_mode_is_named_only_where_it_is_declared_and_where_it_behaves(mode):
    assert files_naming(mode) - {behaviour_module(mode)} - DECLARED == set()
    assert DECLARED <= files_naming(mode)


def test_the_kubernetes_modes_are_named_only_by_the_benchmarks_that_drive_them_differently():
    """Orchestration and cold start run other steps in a Kubernetes mode (a Deployment, a pod
    behind a Service): they name the mode they dispatch on. No analysis module, no figure and no
    mode list does."""
    kubernetes = [m for m in MODES if catalogue.platform(m) == "Kubernetes"]
    assert sorted(kubernetes) == ["k8s-clusterip", "k8s-hostnetwork", "k8s-nodeport", "k8s-pod"]
    named = set().union(*(files_naming(m) for m in kubernetes))
    assert named - DECLARED == {"pipeline/collect/modes/kubernetes.py",
                                "pipeline/benchmarks/orchestration.py",
                                "pipeline/benchmarks/coldstart.py"}  # fmt: skip


def test_the_files_a_new_mode_touches():
    """A mode that runs the same benchmarks as docker-crun needs its behaviour module, its
    line in the registry, its row and its entry: four files, nothing else in the package names
    docker-crun."""
    registry = Path(ROOT / "pipeline/collect/modes/__init__.py").read_text()
    assert "DockerCrun()" in registry and '"docker-crun"' not in registry
    touched = {"pipeline/collect/modes/docker_crun.py", "pipeline/collect/modes/__init__.py",
               *DECLARED}  # fmt: skip
    assert files_naming("docker-crun") | {"pipeline/collect/modes/__init__.py"} == touched
    assert len(touched) == 4


# ---- analysis derives from the catalogue what it once listed by name ---------------------------


def test_a_rootless_mode_is_compared_with_the_rootful_mode_of_its_engine_and_runtime():
    assert catalogue.rootful_twin("rootless-docker", capabilities.serving("coldstart")) == (
        "docker-bridge")
    assert catalogue.rootful_twin("rootless-podman", MODES) == "podman"
    assert catalogue.rootful_twin("pasta", MODES) == "podman"
    assert catalogue.rootful_twin("rootless-docker-layer", capabilities.serving("disk")) == (
        "docker-overlay2")
    assert catalogue.rootful_twin("docker-bridge", MODES) is None  # not rootless
    assert catalogue.rootful_twin("rootless-podman", ["docker-bridge"]) is None


def test_the_analyses_lists_of_modes_are_the_ones_they_held_by_name():
    from pipeline.analysis import coldstart, lb, orchestration, spectrum, throughput

    assert coldstart.ROOTLESS_VS_ROOTFUL == (("rootless-docker", "docker-bridge"),
                                             ("rootless-podman", "podman"))  # fmt: skip
    assert spectrum.SPECTRUM == {
        "docker-bridge": ("runc", "rootful"), "rootless-docker": ("runc", "rootless"),
        "docker-crun": ("crun", "rootful"), "podman": ("crun", "rootful"),
        "rootless-podman": ("crun", "rootless"), "docker-gvisor": ("gVisor", "rootful")}
    assert list(spectrum.SPECTRUM) == ["docker-bridge", "rootless-docker", "docker-crun",
                                       "podman", "rootless-podman", "docker-gvisor"]  # fmt: skip
    orchestrators = {"swarm-overlay": "Docker Swarm", "k8s-pod": "Kubernetes"}
    assert lb.ORCHESTRATORS == orchestration.ORCHESTRATORS == orchestrators
    assert (lb.SWARM_MODE, lb.KUBERNETES_MODE, orchestration.REFERENCE) == (
        "swarm-overlay", "k8s-pod", "k8s-pod")
    assert lb.BASELINE_MODES == {"swarm-overlay": "docker-bridge", "k8s-pod": "k8s-pod"}
    assert throughput.scenario_label("native", "internet") == "Native (over the internet)"
    assert throughput.scenario_label("k8s-pod", "dc") == "Kubernetes pod (pod IP, bridge CNI)"
    assert throughput.scenario_label("docker-nat", "dc") == "Docker published port (NAT)"
    assert throughput.scenario_label("docker-nat", "internet") == (
        "Docker published port (NAT) (internet)")
