"""What the tests on the embedded lab share. They need root. The benchmark tests read the
campaigns of one smoke-profile copy of the repository (`SmokeRepo`, the session's `smoke_repo`
fixture in conftest.py): each runs its benchmark's `dvc repro -s collect-<benchmark>@lab` there,
and the pipeline test's whole `dvc repro` then finds those stages done, so CI collects every
smoke campaign once. That copy logs into the lab the way a fleet usually is (OPERATOR_INVENTORY:
an unprivileged user with sudo, another port and keys, two servers); the other lab tests log in
as root (INVENTORY). They also check that nothing a campaign created is left on any node."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pytest
import yaml

from pipeline.collect import inventory
from pipeline.collect.campaign import Profile
from pipeline.collect.inventory import Inventory
from pipeline.collect.modes import MODES, Context
from pipeline.collect.modes.base import leftovers
from pipeline.collect.remote import Pool
from pipeline.data import schema

INVENTORY = "inventory/lab.yaml"
OPERATOR_INVENTORY = "inventory/lab-operator.yaml"
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root")
# The shortest settings the tools take, for the modes measured in short campaigns of their own
# (ShortCampaigns): one run, one-second windows (whole seconds: iperf3 reads --time as an
# integer, and 0 is "forever"; latency: 200 round trips).
SHORT_WINDOW = Profile(runs=1, seconds=1.0, omit_seconds=0.0, warmup_seconds=1.0)
SHORT_COUNTED = Profile(runs=1, seconds=1.0, omit_seconds=0.0, warmup_seconds=1.0, count=200,
                        warmup_count=50)  # fmt: skip


ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent


def smoke_settings(benchmark: str) -> tuple[Profile, dict]:
    """The window and the benchmark's own options the smoke `dvc repro` collects ``benchmark``
    with: what pipeline/stages.py hands the collection notebook on the smoke profile."""
    from pipeline import params

    smoke = params.Params(raw={}, profile=yaml.safe_load(
        (ROOT / "conf" / "profiles" / "smoke.yaml").read_text()))  # fmt: skip
    return Profile(**smoke.window(benchmark)), smoke.options(benchmark)


def smoke_without() -> set[str]:
    """The smoke profile's ``without_modes`` (the runtime modes have a lab test of their own)."""
    smoke = yaml.safe_load((ROOT / "conf" / "profiles" / "smoke.yaml").read_text())
    return {m.strip() for m in smoke.get("without_modes", "").split(",") if m.strip()}


def smoke_modes(benchmark: str) -> set[str]:
    """The modes the smoke profile measures a host or scenario benchmark in: those it applies
    to, less the profile's ``without_modes``."""
    from pipeline.benchmarks import BENCHMARKS

    return set(BENCHMARKS[benchmark]().modes) - smoke_without()


def dvc_env() -> dict[str, str]:
    return {**os.environ, "PATH": f"{VENV_BIN}:{os.environ['PATH']}"}


def ctrl_c_reaches_the_child() -> None:
    """Popen's preexec_fn for a child the test interrupts as Ctrl-C would: SIGINT back to its
    default. A shell starts background jobs with SIGINT ignored and the child inherits that (a
    Python child then never raises KeyboardInterrupt), so a suite launched in the background
    could not interrupt anything without this."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def dvc(workdir: Path, *args: str, timeout: float = 3600) -> subprocess.CompletedProcess:
    """Run dvc; past the timeout it gets Ctrl-C first, so the campaign cleans up."""
    proc = subprocess.Popen(
        ["dvc", *args], cwd=workdir, env=dvc_env(), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
        preexec_fn=ctrl_c_reaches_the_child,
    )  # fmt: skip
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=300)
        pytest.fail(f"dvc {' '.join(args)} took over {timeout} s:\n{out[-3000:]}\n{err[-3000:]}")
    print(out[-4000:], err[-4000:])
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def set_param(workdir: Path, pattern: str, replacement: str) -> None:
    params = workdir / "params.yaml"
    text, n = re.subn(pattern, replacement, params.read_text(), flags=re.M)
    assert n == 1, f"{pattern!r} not found exactly once in params.yaml"
    params.write_text(text)


class SmokeRepo:
    """A copy of the repository's files (as a clone would have them) on the smoke profile."""

    def __init__(self, dest: Path) -> None:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=ROOT, capture_output=True, text=True, check=True,
        ).stdout.split("\0")  # fmt: skip
        for name in filter(None, listed):
            src = ROOT / name
            if src.is_file():
                (dest / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest / name)
        # build outputs `make setup` made, which a clone's own `make setup` would make too
        for built in (".make/bin/co-loadgen", ".make/bin/sockperf"):
            (dest / built).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / built, dest / built)
        # A clone: one commit (DVC experiments need one), then the smoke profile chosen as
        # `dvc exp run -S profile=smoke` chooses it.
        for git in (["init", "-q"], ["config", "user.name", "lab test"],
                    ["config", "user.email", "lab-test@localhost"], ["add", "-A"],
                    ["commit", "-qm", "clone"]):  # fmt: skip
            subprocess.run(["git", *git], cwd=dest, check=True, capture_output=True)
        set_param(dest, r"^profile: \w+$", "profile: smoke")
        # one measurement per window, as every campaign a lab test starts (conftest.py)
        set_param(dest, r"^  interference_retries: \d+$", "  interference_retries: 0")
        set_param(dest, r"^  lab: inventory/lab\.yaml$", f"  lab: {OPERATOR_INVENTORY}")
        # the stages' dependencies name the inventory, as after a user's own edit
        subprocess.run([sys.executable, "-m", "pipeline.stages"], cwd=dest, check=True,
                       capture_output=True)  # fmt: skip
        self.path = dest

    def collected(self, benchmark: str) -> tuple[pd.DataFrame, pd.DataFrame, Path]:
        """``benchmark``'s smoke campaign (its stage is run unless already done): its runs, its
        samples and its directory."""
        root = self.path / "data" / "raw" / benchmark / "lab"
        if not (root / "runs.parquet").exists():
            started = time.monotonic()
            result = dvc(self.path, "repro", "-s", f"collect-{benchmark}@lab")
            assert result.returncode == 0, result.stderr[-3000:]
            print(f"collected {benchmark} in {time.monotonic() - started:.0f} s")
        return (
            pd.read_parquet(root / "runs.parquet"),
            schema.read_samples(root / "samples.parquet"),
            root,
        )


class ChildCampaign:
    """A campaign in a child process, as a collection stage runs it (``code``: the Python that
    runs it), its output read as it comes; ``root``: its dataset's directory. The fault tests
    inject their fault once it reaches a moment (``wait_for``)."""

    def __init__(self, code: str, root: Path) -> None:
        self.root = root
        self.proc = subprocess.Popen(
            [sys.executable, "-u", "-c", code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, start_new_session=True, preexec_fn=ctrl_c_reaches_the_child,
        )  # fmt: skip
        self.started = time.monotonic()
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def saved_steps(self) -> int:
        return len(list(self.root.glob("parts/*/run-*.runs.parquet")))

    def wait_for(self, what: str, ready: Callable[[], bool], budget: float = 90) -> None:
        """Poll (every 50 ms, at most ``budget`` s) until ``ready()``, the campaign running."""
        deadline = time.monotonic() + budget
        while time.monotonic() < deadline and self.proc.poll() is None:
            if ready():
                return
            time.sleep(0.05)
        assert self.proc.poll() is None, f"the campaign ended before {what}:\n{self.output}"
        pytest.fail(f"no {what} within {budget} s:\n{self.output}")

    def finish(self, timeout: float = 300) -> str:
        """The campaign's output once it has ended (Ctrl-C past ``timeout`` s, and a failure)."""
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGINT)
            self.proc.wait(timeout=120)
            pytest.fail(f"the campaign took over {timeout} s:\n{self.output}")
        self._reader.join(timeout=10)
        print(self.output[-3000:])
        print(f"campaign: {time.monotonic() - self.started:.0f} s")
        return self.output


@contextmanager
def lab_session() -> Iterator[tuple[Inventory, Pool, Context]]:
    """SSH sessions to the lab's hosts, and a Context for the modes' helpers."""
    inv = inventory.load(INVENTORY, known_modes=MODES)
    with Pool(inv) as pool:
        yield inv, pool, Context(inventory=inv, pool=pool, campaign="check")


def assert_nothing_left() -> None:
    """No labelled container, network, service, volume, pidfile or test directory on any host."""
    with lab_session() as (inv, _, ctx):
        for host in (*inv.servers, inv.dc_client):
            assert leftovers(ctx, host) == [], host.name


class ShortCampaigns:
    """One short campaign per benchmark, collected on first use through the real campaign loop
    on the lab inventory (native planned beside ``modes`` where a benchmark has it); what each
    took is kept in ``seconds`` (a test's CI cost, printed by ``report``)."""

    def __init__(self, raw: Path, modes: list[str], options: dict[str, dict], what: str) -> None:
        self.raw, self.modes, self.options, self.what = raw, modes, options, what
        self.found: dict[str, tuple[pd.DataFrame, pd.DataFrame]] = {}
        self.seconds: dict[str, float] = {}

    def __call__(self, benchmark: str) -> tuple[pd.DataFrame, pd.DataFrame]:
        from pipeline.environments import collect

        if benchmark not in self.found:
            started = time.monotonic()
            window = SHORT_COUNTED if benchmark == "latency" else SHORT_WINDOW
            collect(benchmark, ROOT / INVENTORY, self.raw, window, seed=5, modes=self.modes,
                    paths=("dc", "host"), options=self.options.get(benchmark))  # fmt: skip
            self.seconds[benchmark] = time.monotonic() - started
            print(f"{self.what}: {benchmark} collected in {self.seconds[benchmark]:.0f} s")
            root = self.raw / benchmark / "lab"
            self.found[benchmark] = (pd.read_parquet(root / "runs.parquet"),
                                     schema.read_samples(root / "samples.parquet"))  # fmt: skip
        return self.found[benchmark]

    def report(self) -> None:
        print(f"{self.what}: {sum(self.seconds.values()):.0f} s in all: {self.seconds}")


def measured_wrk_log(runs: pd.DataFrame, samples: pd.DataFrame, root: Path, variant: str) -> str:
    """The lb step's kept log for ``variant``, after checking that its last wrk output (the
    measured window) re-parses to the stored rate; returns the whole log."""
    from pipeline.benchmarks.lb import parse_wrk
    from pipeline.data import rawlog

    row = runs[runs["variant"] == variant].iloc[0]
    raw = rawlog.read_log(root, row.raw_log)
    measured = raw[raw.rindex("/usr/bin/wrk") :]  # the last wrk run is the measured window
    rate = samples[
        (samples["variant"] == variant)
        & ~samples["warmup"]
        & (samples["metric"] == "lb_requests_per_s")
    ]["value"].iloc[0]
    assert parse_wrk(measured).rate == pytest.approx(rate)
    return raw


def assert_lb_windows_plausible(runs: pd.DataFrame, samples: pd.DataFrame) -> set[str]:
    """Every ok lb step's measured window: one rate (thousands to some ten thousands of 1 KiB
    responses per second over keep-alive on 2 shared cores), no error, wrk's four latency
    percentiles in order, one warm-up rate. Returns the balancers that measured."""
    measured = samples[~samples["warmup"]]
    ok = runs[runs["status"] == "ok"]
    for variant in ok["variant"]:
        mine = measured[measured["variant"] == variant]
        rate = mine[mine["metric"] == "lb_requests_per_s"]["value"]
        errors = mine[mine["metric"] == "lb_errors"]["value"]
        assert len(rate) == 1 and len(errors) == 1, variant
        assert 1_000 < rate.iloc[0] < 500_000, (variant, rate.iloc[0])
        assert errors.iloc[0] == 0, variant
        p = mine[mine["metric"] == "lb_latency_us"].set_index("sample")["value"]
        assert list(p.index) == [500, 900, 990, 999]
        assert 10 < p[500] <= p[900] <= p[990] <= p[999] < 2_000_000, (variant, p.to_dict())
        warm = samples[samples["warmup"] & (samples["variant"] == variant)]
        assert (warm["metric"] == "lb_requests_per_s").sum() == 1, variant
    return {v.split("-")[0] for v in ok["variant"]}
