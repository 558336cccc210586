"""The lab tests' shared smoke-profile repository: one per session, so each smoke campaign is
collected once (tests/integration/lab_campaign.py)."""

import pytest

from pipeline.data.interference import Thresholds
from tests.integration.lab_campaign import SmokeRepo


@pytest.fixture(scope="module", autouse=True)
def measured_once_unless_asked():
    """A campaign started here measures a flagged window once, unless its test asks for
    re-measurement (``interference_retries`` given, as test_interference_lab does): the other
    lab tests count windows, warm-ups and reps, which a background job on the CI machine must
    not change. Re-measurement has tests of its own (unit and lab). Per module: a session-wide
    patch would outlive this directory's tests and reach the unit tests a worker runs next."""
    plain = Thresholds.from_params.__func__

    def from_params(cls, analysis: dict | None = None) -> Thresholds:
        return plain(cls, {"interference_retries": 0, **(analysis or {})})

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Thresholds, "from_params", classmethod(from_params))
        yield


@pytest.fixture(scope="session")
def smoke_repo(tmp_path_factory) -> SmokeRepo:
    return SmokeRepo(tmp_path_factory.mktemp("repo"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests that take the whole lab down, or leave its Kubernetes cluster up, run after
    every other test (in their own order): the lab's daemons, Swarm and tool images are made
    once per session, and no idle cluster loads the hosts under another benchmark."""
    last = [item for item in items if item.get_closest_marker("runs_last")]
    if last:
        items[:] = [item for item in items if item not in last] + last


def pytest_terminal_summary(terminalreporter) -> None:
    """What tests recorded as ``record_property("rows", ...)`` (the fault tests' rows per step
    before and after the fault), in the summary of every run, passed or failed: CI's log shows
    them without -s."""
    lines = [
        f"{report.nodeid}: {value}"
        for reports in terminalreporter.stats.values()
        for report in reports
        if getattr(report, "when", None) == "call"
        for name, value in getattr(report, "user_properties", ())
        if name == "rows"
    ]
    if lines:
        terminalreporter.write_sep("-", "rows per step before and after each fault")
        for line in lines:
            terminalreporter.write_line(line)
