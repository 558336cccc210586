"""Does the harness perturb what it measures? The pipeline against the same tool run by hand.

Arm "pipeline": a one-step campaign through `pipeline.collect.campaign.Campaign` (SSH, the native
mode's
server start, the campaign's warm-up, parsing, parquet). Arm "by hand": the same server and
client argv, on the same lab hosts, started directly in their network namespaces with
`nsenter`, no SSH and no Python in the loop; its output goes through the same parser (the
parsers are tested against verbatim tool output on their own). The arms take every order in
turn (A B, B A, ...) so a slow drift of the machine hits both equally.

``--ssh-arm``: a third arm, the same argv started by hand from a terminal, ``ssh host 'argv'``
with the OpenSSH client (the inventory's key, host keys verified). Against the by-hand arm it
tells whether a difference comes from starting the tools through SSH at all or from the
pipeline's own Python (paramiko, the campaign around the step).

``--null-arm``: a control arm, by hand again (the same launcher as "by hand"): what two
by-hand runs of one round differ by is the machine's own noise, the floor under any harness
effect this design can resolve.

Per round: sockperf UDP ping-pong p50 round trip over a 10 s window after a 1 s warm-up run
(case "latency"; "latency-study" is the study profile's window, 10,000 round trips after 1,000
warm-up ones in one run, ~0.55 s here) and iperf3 TCP throughput, the median of the 1 s
intervals of a 10 s window after 2 s omitted and a 1 s warm-up run ("throughput-study": the
study profile's 3 s window after 1 s omitted). Why 10 s for latency: on this 2-core machine the
p50 of a 0.55 s stretch of one continuous sockperf run moves by ~11% (SD of the log ratio of two
stretches 5 s apart, no harness anywhere: harness/window_noise.py), so the study window would need
~350 paired rounds to resolve 2%; 10 s stretches of the same run differ by ~4% (~40 rounds). Why
10 s for throughput: a new iperf3 connection here now and then runs at about half its rate for
its first ~3 s (a 90 s run by hand: 10.0, 9.6, 9.2, then 17-18.6 Gbit/s), which a 3
s window after 1 s omitted takes whole (with the study window: 10 of 80 rounds under 13
Gbit/s, round-to-round CV 15-18%); the median of ten intervals after two omitted takes it far
less often (2 of 80 rounds under 13 Gbit/s, CV 9%). The publication profile's windows
(1,000,000 round trips, ~55 s; 20 s after 2 s omitted) are longer still. The figure is the ratio
of the arms' medians over rounds, with bootstrap intervals over rounds; the verdict is the
study's own rule (`pipeline.analysis.stats.verdict`) against a 2% margin: "equivalent" means the 90%
interval of the ratio and the paired TOST on the rounds' log ratios both lie inside 0.98..1.02.
"inconclusive" means this machine's round-to-round noise is too large for that resolution with
this many rounds, not that the harness perturbs.

Placement (pipeline/lab/cpus.py, a campaign option; the pipeline arm's campaign applies it
itself, the by-hand arms the same way, starting their processes in the hosts' cpuset groups,
OpenSSH through the hosts' sshds, which live there). Latency runs "split": the server host's
processes on the first half of the CPUs, the client host's on the rest, so the scheduler never
puts sockperf's client and server on one CPU by chance (that round's p50 would fall from ~55 us
to ~6 us and decide the comparison). Throughput runs "shared", as the campaigns run: "split"
does not spare it the half-rate windows (harness/placement.py: 5 of 96 windows under split, 1 of
96 under shared; with the study window: 14 of 80 rounds under split). The harness itself
(Python, the SSH client) stays free on every CPU, so whatever it takes from the measurement
still shows.

Needs root and the embedded lab (brought up here if it is down). Traffic stays in the lab.
"""

from __future__ import annotations

import argparse
import itertools
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness._lab import cases_on_the_lab, measured_samples, one_variant  # noqa: E402
from pipeline.analysis import stats  # noqa: E402
from pipeline.benchmarks.base import Window  # noqa: E402
from pipeline.benchmarks.latency import Latency  # noqa: E402
from pipeline.benchmarks.throughput import Throughput  # noqa: E402
from pipeline.collect import inventory  # noqa: E402
from pipeline.collect.campaign import Profile  # noqa: E402
from pipeline.lab import cpus  # noqa: E402

GOAL = 0.02
CASES = {
    # benchmark, variant, profile, metric, statistic, the lab's CPU placement (see above)
    "latency": (Latency, "udp", Profile(1, 10.0, 0.0, 1.0, 1), "udp_rtt", 0.5, "split"),
    "latency-study": (
        Latency, "udp", Profile(1, 30.0, 0.0, 1.0, 1, 10_000, 1_000), "udp_rtt", 0.5, "split"
    ),
    "throughput": (
        Throughput, "tcp", Profile(1, 10.0, 2.0, 1.0), "tcp_throughput_received", 0.5, "shared"
    ),
    "throughput-study": (
        Throughput, "tcp", Profile(1, 3.0, 1.0, 1.0), "tcp_throughput_received", 0.5, "shared"
    ),
}  # fmt: skip
DEFAULT_CASES = ("latency", "throughput")


def pipeline_round(case: str, inv: inventory.Inventory, workdir: Path, seed: int) -> float:
    cls, variant, profile, metric, q, placement = CASES[case]
    out = workdir / f"{case}-{seed}"
    measured = measured_samples(one_variant(cls, variant), inv, profile, out, seed, ["native"],
                                metric, placement)["value"]  # fmt: skip
    return float(np.quantile(measured, q, method="inverted_cdf"))


def ratio_interval(pipeline: list[float], hand: list[float], n_boot: int = 4000):
    """95% and 90% bootstrap percentile intervals of median(pipeline) / median(hand), rounds
    resampled whole: a round's arms ran back to back (every order in turn), so they stay
    paired and a drift of the machine between rounds cancels."""
    rng = np.random.default_rng(0)
    a, b = np.asarray(pipeline), np.asarray(hand)
    idx = rng.integers(0, a.size, (n_boot, a.size))
    boot = np.median(a[idx], axis=1) / np.median(b[idx], axis=1)
    return tuple(np.quantile(boot, [0.025, 0.975, 0.05, 0.95]))


def _netns(host: str, argv: list[str]) -> list[str]:
    return ["nsenter", f"--net=/run/netns/{host}", *argv]


class Nsenter:
    """By hand at the machine's console: the lab host's network namespace entered directly,
    no SSH and no Python between the tool and its host."""

    def start(self, host: inventory.Host, argv: list[str]) -> Callable[[], None]:
        proc = subprocess.Popen(
            _netns(host.name, argv),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=lambda: cpus.join(host),
        )

        def stop() -> None:
            proc.terminate()
            proc.wait(timeout=10)

        return stop

    def run(self, host: inventory.Host, argv: list[str], timeout: float) -> str:
        done = subprocess.run(
            _netns(host.name, argv),
            capture_output=True,
            text=True,
            timeout=timeout,
            preexec_fn=lambda: cpus.join(host),
        )
        return done.stdout


class OpenSsh:
    """By hand from a terminal: ``ssh host 'argv'`` with the OpenSSH client and the inventory's
    key and known_hosts (host keys verified). Placed as the pipeline arm: the hosts' sshds
    live in their cpuset groups."""

    def _ssh(self, host: inventory.Host, command: str, timeout: float) -> str:
        s = host.ssh
        argv = ["ssh", "-i", str(s.key_file), "-p", str(s.port), "-o", "BatchMode=yes",
                "-o", f"UserKnownHostsFile={s.known_hosts}", "-o", "StrictHostKeyChecking=yes",
                f"{s.user}@{host.address}", command]  # fmt: skip
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, check=True
        ).stdout

    def start(self, host: inventory.Host, argv: list[str]) -> Callable[[], None]:
        started = f"setsid {shlex.join(argv)} > /dev/null 2>&1 < /dev/null & echo $!"
        pid = int(self._ssh(host, started, 30))
        # TERM, then wait (bounded) until the port is free for the next round's server
        stop = (f"kill {pid}; for i in $(seq 100); do kill -0 {pid} 2>/dev/null || exit 0; "
                f"sleep 0.1; done; kill -9 {pid}")  # fmt: skip
        return lambda: self._ssh(host, stop, 30)

    def run(self, host: inventory.Host, argv: list[str], timeout: float) -> str:
        try:
            return self._ssh(host, shlex.join(argv), timeout)
        except subprocess.CalledProcessError as e:
            return e.stdout  # as the by-hand arm: the parser names what went wrong


@contextmanager
def served(launcher: Nsenter | OpenSsh, host: inventory.Host, argv: list[str], placement: str,
           ) -> Iterator[None]:  # fmt: skip
    """The server ``argv`` running on ``host`` under ``placement`` (as Campaign.run applies
    it), given 1 s to bind; stopped, and every host on every CPU again, after, whatever
    happens."""
    cpus.place(placement)
    try:
        stop = launcher.start(host, argv)
        try:
            time.sleep(1.0)  # the server binds; the pipeline's warm-up absorbs this by retrying
            yield
        finally:
            stop()
    finally:
        cpus.place("shared")


def manual_round(case: str, inv: inventory.Inventory, launcher: Nsenter | OpenSsh) -> float:
    """One round of the same argv the pipeline runs, started by ``launcher`` instead."""
    cls, variant, profile, metric, q, placement = CASES[case]
    bench = one_variant(cls, variant)
    server, client = inv.servers[0], inv.dc_client  # where the native mode puts them

    def client_run(window: Window) -> str:
        argv = bench.client_argv(variant, server.address, window, "dc")
        return launcher.run(client, argv, bench.client_timeout(window, "dc"))

    with served(launcher, server, bench.server_argv(variant), placement):
        measured = Window(profile.seconds, profile.omit_seconds, profile.count)
        warm = Window(profile.warmup_seconds, 0.0, profile.warmup_count, warmup=True)
        folded = bench.folded(variant, warm, measured)
        if folded is not None:  # as Campaign: one run holds both
            samples = bench.split_folded(variant, client_run(folded), warm, folded)[1]
        else:
            client_run(warm)
            samples = bench.parse(variant, client_run(measured), measured)
    values = [s.value for s in samples if s.metric == metric]
    return float(np.quantile(values, q, method="inverted_cdf"))


def compare(case: str, label: str, arm: list[float], hand: list[float]) -> tuple[str, str]:
    """Print ``arm`` against the by-hand arm; return (verdict, its one-line summary)."""
    ratio = np.median(arm) / np.median(hand)
    lo, hi, lo_eq, hi_eq = ratio_interval(arm, hand)
    # the study's rule: the paired TOST and t test on the rounds' log ratios must agree
    tost = stats.tost_log_ratio(arm, hand, GOAL)
    verdict = stats.verdict(
        ratio, lo, hi, lo_eq, hi_eq, GOAL, case == "throughput", tost.p_value,
        diff_p=tost.diff_p,
    )  # fmt: skip
    unit = "us p50 RTT" if CASES[case][0] is Latency else "bit/s"
    cv = {k: np.std(v, ddof=1) / np.mean(v) for k, v in ((label, arm), ("by hand", hand))}
    print(
        f"  {case:<10} {label} {np.median(arm):,.5g} vs by hand {np.median(hand):,.5g} {unit}: "
        f"ratio {ratio:.4f} [95%: {lo:.4f}, {hi:.4f}; 90%: {lo_eq:.4f}, {hi_eq:.4f}]; "
        f"paired geometric mean {tost.ratio:.4f} [90%: {tost.lo:.4f}, {tost.hi:.4f}], "
        f"TOST p {tost.p_value:.3f} -> {verdict} (margin +-{GOAL:.0%}); "
        f"round-to-round CV " + ", ".join(f"{k} {v:.1%}" for k, v in cv.items())
    )
    line = (
        f"{label} / by hand {ratio:.4f} [95%: {lo:.4f}, {hi:.4f}], paired TOST p "
        f"{tost.p_value:.3f} -> {verdict}"
    )
    return verdict, line


def describe(placement: str, inv: inventory.Inventory) -> str:
    """A placement as the summary prints it."""
    if reason := cpus.unavailable():
        return f"unplaced ({reason})"
    if placement == "shared":
        return "every host on every CPU"
    placed = cpus.plan(placement)
    return (f"server host CPU {cpus.fmt(placed[inv.servers[0].name])}, client host CPU "
            f"{cpus.fmt(placed[inv.dc_client.name])}")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40, help="rounds per arm")
    parser.add_argument(
        "--cases", default=",".join(DEFAULT_CASES),
        help=f"comma-separated, of {', '.join(CASES)} (default: %(default)s)",
    )  # fmt: skip
    parser.add_argument(
        "--ssh-arm", action="store_true",
        help="a third arm: the same argv by hand through the OpenSSH client",
    )  # fmt: skip
    parser.add_argument(
        "--null-arm", action="store_true",
        help="a control arm: by hand again, the machine's own noise between two by-hand runs",
    )  # fmt: skip
    args = parser.parse_args(argv)
    cases, inv = cases_on_the_lab(parser, args.cases, CASES)
    extra = [arm for arm, on in (("ssh", args.ssh_arm), ("again", args.null_arm)) if on]
    names = ["pipeline", "hand", *extra]
    # Every order of the arms in turn (two arms: AB BA AB ...), so a slow drift of the machine
    # hits each arm equally and a round's arms stay paired.
    orders = list(itertools.permutations(names))
    print(f"perturbation: {' vs '.join(names)}, {args.rounds} rounds per arm, arms in every "
          f"order in turn")  # fmt: skip
    failed = False
    tmpdir = tempfile.TemporaryDirectory(prefix="co-perturbation-")
    with tmpdir as tmp:
        launchers = {"hand": Nsenter(), "ssh": OpenSsh(), "again": Nsenter()}
        for case in cases:
            placement = describe(CASES[case][-1], inv)
            print(f"{case}: {placement}")
            arms: dict[str, list[float]] = {name: [] for name in names}
            for i in range(args.rounds):
                for arm in orders[i % len(orders)]:
                    if arm == "pipeline":
                        value = pipeline_round(case, inv, Path(tmp), seed=i)
                    else:
                        value = manual_round(case, inv, launchers[arm])
                    arms[arm].append(value)
            verdict, line = compare(case, "pipeline", arms["pipeline"], arms["hand"])
            failed |= verdict != "equivalent"
            also = [compare(case, arm, arms[arm], arms["hand"])[1] for arm in extra]
            for arm, values in arms.items():
                print(f"{'':13}{arm:<9}" + " ".join(f"{v:,.5g}" for v in values))
            print(
                f"summary: perturbation {case}: {'; '.join([line, *also])}; {args.rounds} "
                f"rounds per arm, {placement} (goal: pipeline within +-{GOAL:.0%})"
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
