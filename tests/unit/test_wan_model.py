"""The WAN emulator's decision model (pipeline.lab.wan), without TUN devices or root."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable
from pathlib import Path

import pytest

from pipeline.lab import wan
from pipeline.lab.wan import DelayLine, Profile

MS = 1_000_000  # ns


def line(seed: int = 1, direction: str = "a_to_b", **kw: object) -> DelayLine:
    return DelayLine.create(Profile(**kw), seed=seed, direction=direction)  # type: ignore[arg-type]


def offer_many(dl: DelayLine, n: int, spacing_ns: int) -> list[wan.Verdict]:
    return [dl.offer(b"p%d" % i, i * spacing_ns) for i in range(n)]


def drain(dl: DelayLine) -> list[tuple[int, bytes]]:
    """All (release_ns, packet) in the order the line releases them."""
    out = []
    while (head := dl.next_release_ns()) is not None:
        out.append((head, dl.pop()))
    return out


# -- delay and jitter -------------------------------------------------------------------------


def test_zero_jitter_gives_exact_delay() -> None:
    dl = line(delay_ms=20.0)
    arrivals = [0, 1, 999_999, 5 * MS, 5 * MS, 123_456_789]
    for t in arrivals:
        assert dl.offer(b"x", t) == "queued"
    released = [r for r, _ in drain(dl)]
    assert released == [t + 20 * MS for t in arrivals]


def test_fractional_delay_is_rounded_to_ns_not_ms() -> None:
    dl = line(delay_ms=0.25)
    dl.offer(b"x", 1000)
    assert dl.next_release_ns() == 1000 + 250_000


def test_zero_delay_releases_immediately() -> None:
    dl = line()
    dl.offer(b"a", 42)
    assert list(dl.due(42)) == [b"a"]
    assert dl.counters.forwarded == 1


def test_due_releases_only_what_is_due_and_counts_it() -> None:
    dl = line(delay_ms=10.0)
    dl.offer(b"a", 0)
    dl.offer(b"bb", 5 * MS)
    assert list(dl.due(10 * MS - 1)) == []
    assert list(dl.due(10 * MS)) == [b"a"]
    assert len(dl) == 1
    assert list(dl.due(100 * MS)) == [b"bb"]
    assert dl.counters.forwarded == 2
    assert dl.counters.bytes_forwarded == 3


@pytest.mark.parametrize("allow_reorder", [False, True])
def test_no_packet_leaves_before_it_arrived(allow_reorder: bool) -> None:
    # Jitter far larger than the delay: the clip at zero total delay is exercised often.
    dl = line(delay_ms=1.0, jitter_ms=10.0, allow_reorder=allow_reorder)
    for i in range(2000):
        dl.offer(str(i).encode(), i * MS)
    for release, packet in drain(dl):
        assert release >= int(packet) * MS


def test_no_reorder_invariant_with_large_jitter() -> None:
    n = 10_000
    dl = line(delay_ms=20.0, jitter_ms=15.0, seed=7)
    offer_many(dl, n, spacing_ns=MS // 10)
    out = drain(dl)
    releases = [r for r, _ in out]
    assert [p for _, p in out] == [b"p%d" % i for i in range(n)], "FIFO order broken"
    assert all(a <= b for a, b in zip(releases, releases[1:], strict=False))


def test_allow_reorder_actually_reorders_with_the_same_jitter() -> None:
    # The counterpart of the invariant above: the same profile with reordering allowed does
    # reorder, so the invariant is a property of the clamp, not of a too-small jitter.
    n = 10_000
    dl = line(delay_ms=20.0, jitter_ms=15.0, seed=7, allow_reorder=True)
    offer_many(dl, n, spacing_ns=MS // 10)
    order = [int(p[1:]) for _, p in drain(dl)]
    assert sorted(order) == list(range(n))
    inversions = sum(1 for a, b in zip(order, order[1:], strict=False) if a > b)
    assert inversions > n // 10


def test_normal_jitter_has_the_configured_spread() -> None:
    dl = line(delay_ms=100.0, jitter_ms=3.0, jitter_dist="normal", allow_reorder=True)
    n = 5000
    for i in range(n):
        dl.offer(str(i).encode(), i * 1000 * MS)  # 1 s apart: no clamp interferes
    extra_ms = [(r - int(p) * 1000 * MS) / MS - 100.0 for r, p in drain(dl)]
    assert abs(statistics.fmean(extra_ms)) < 4 * 3.0 / math.sqrt(n)
    assert statistics.stdev(extra_ms) == pytest.approx(3.0, rel=0.06)


def test_uniform_jitter_stays_within_bounds_and_fills_them() -> None:
    dl = line(delay_ms=100.0, jitter_ms=5.0, jitter_dist="uniform", allow_reorder=True)
    for i in range(5000):
        dl.offer(str(i).encode(), i * 1000 * MS)
    extra_ms = [(r - int(p) * 1000 * MS) / MS - 100.0 for r, p in drain(dl)]
    assert min(extra_ms) >= -5.0 and max(extra_ms) <= 5.0
    assert min(extra_ms) < -4.9 and max(extra_ms) > 4.9
    # Uniform on [-a, a] has sd a/sqrt(3); a normal with sd 5 would give ~5.
    assert statistics.stdev(extra_ms) == pytest.approx(5.0 / math.sqrt(3), rel=0.06)


def test_release_time_pure_function() -> None:
    assert wan.release_time(100, 50, 0, None, False) == 150
    assert wan.release_time(100, 50, -80, None, False) == 100  # clipped at arrival
    assert wan.release_time(100, 50, 0, 500, False) == 500  # waits for the packet ahead
    assert wan.release_time(100, 50, 0, 500, True) == 150  # unless reordering is allowed


# -- loss -------------------------------------------------------------------------------------


@pytest.mark.parametrize("loss_pct", [0.1, 1.0, 20.0, 50.0])
def test_loss_rate_within_binomial_tolerance(loss_pct: float) -> None:
    n = 50_000
    dl = line(loss_pct=loss_pct, seed=3)
    verdicts = offer_many(dl, n, spacing_ns=1000)
    p = loss_pct / 100
    lost = verdicts.count("lost")
    assert lost == dl.counters.lost
    # 4.5 sigma: a fixed seed makes this deterministic; the band only has to be honest.
    assert abs(lost - n * p) <= 4.5 * math.sqrt(n * p * (1 - p)) + 1


def test_loss_extremes() -> None:
    assert set(offer_many(line(loss_pct=0.0), 1000, 1)) == {"queued"}
    assert set(offer_many(line(loss_pct=100.0), 1000, 1)) == {"lost"}


def test_losses_are_independent_not_bursty() -> None:
    # Bernoulli loss: P(lost | previous lost) is the same as P(lost).
    verdicts = offer_many(line(loss_pct=30.0, seed=11), 50_000, 1000)
    lost = [v == "lost" for v in verdicts]
    after_loss = [b for a, b in zip(lost, lost[1:], strict=False) if a]
    assert statistics.fmean(after_loss) == pytest.approx(0.30, abs=0.02)


# -- determinism ------------------------------------------------------------------------------


def decisions(seed: int, direction: str = "a_to_b") -> list[int | None]:
    dl = line(seed=seed, direction=direction, delay_ms=5.0, jitter_ms=2.0, loss_pct=10.0)
    return [dl.decide(i * MS) for i in range(2000)]


def test_same_seed_same_decisions() -> None:
    assert decisions(1) == decisions(1)


def test_different_seed_or_direction_differs() -> None:
    base = decisions(1)
    assert decisions(2) != base
    # Each direction has its own stream: the two directions do not drop the same packets.
    assert decisions(1, "b_to_a") != base


def loss_pattern(seed: int, direction: str) -> list[wan.Verdict]:
    return offer_many(line(seed=seed, direction=direction, loss_pct=10.0), 2000, MS)


def jitter_pattern(seed: int, direction: str) -> list[int | None]:
    dl = line(seed=seed, direction=direction, delay_ms=50.0, jitter_ms=2.0, allow_reorder=True)
    return [dl.decide(i * MS) for i in range(2000)]


@pytest.mark.parametrize("pattern", [loss_pattern, jitter_pattern])
def test_each_stream_depends_on_seed_and_direction(pattern: Callable[[int, str], list]) -> None:
    # Checked per stream: loss alone and jitter alone, so one stream ignoring the seed or
    # the direction cannot hide behind the other one varying.
    base = pattern(1, "a_to_b")
    assert pattern(1, "a_to_b") == base
    assert pattern(2, "a_to_b") != base
    assert pattern(1, "b_to_a") != base


def test_jitter_does_not_change_which_packets_are_lost() -> None:
    # Loss and jitter use separate streams, so profiles differing only in jitter compare
    # like with like.
    a = offer_many(line(seed=5, loss_pct=10.0), 3000, MS)
    b = offer_many(line(seed=5, loss_pct=10.0, jitter_ms=4.0), 3000, MS)
    assert a == b


# -- queue limit ------------------------------------------------------------------------------


def test_queue_limit_tail_drops_and_counts_separately() -> None:
    dl = line(delay_ms=100.0, queue_limit=5)
    verdicts = offer_many(dl, 8, spacing_ns=1)
    assert verdicts == ["queued"] * 5 + ["queue_dropped"] * 3
    assert dl.counters.queue_dropped == 3
    assert dl.counters.lost == 0
    assert dl.counters.received == 8
    # The survivors are the head of the burst (tail drop), in order.
    assert [p for _, p in drain(dl)] == [b"p0", b"p1", b"p2", b"p3", b"p4"]


def test_queue_accepts_again_once_drained() -> None:
    dl = line(delay_ms=1.0, queue_limit=2)
    assert offer_many(dl, 3, spacing_ns=0) == ["queued", "queued", "queue_dropped"]
    assert len(list(dl.due(10 * MS))) == 2
    assert dl.offer(b"later", 10 * MS) == "queued"


class ScriptedRng:
    """Stands in for random.Random: jitter draws (in ms) come from a script."""

    def __init__(self, gauss_ms: list[float]) -> None:
        self._gauss = iter(gauss_ms)

    def gauss(self, mu: float, sigma: float) -> float:
        return next(self._gauss)

    def random(self) -> float:
        return 0.99  # never below a small loss probability


def test_tail_drop_does_not_hold_back_the_next_packet() -> None:
    # A dropped packet never leaves, so it must not become the "packet ahead" that later
    # packets wait for under the no-reorder rule. The dropped one draws +1 s of jitter: if it
    # wrongly counted, the next packet would leave ~1 s late instead of after 10 ms.
    profile = Profile(delay_ms=10.0, jitter_ms=1.0, queue_limit=1)
    dl = DelayLine(profile, ScriptedRng([]), ScriptedRng([0.0, 1000.0, 0.0]))  # type: ignore[arg-type]
    assert dl.offer(b"first", 0) == "queued"
    assert dl.offer(b"dropped", 1) == "queue_dropped"
    assert list(dl.due(10 * MS)) == [b"first"]
    assert dl.offer(b"next", 20 * MS) == "queued"
    assert dl.next_release_ns() == 30 * MS


# -- profile, CLI, stats ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "kw",
    [
        {"delay_ms": -1},
        {"jitter_ms": -0.1},
        {"loss_pct": 101},
        {"loss_pct": -1},
        {"queue_limit": 0},
        {"jitter_dist": "pareto"},
    ],
)
def test_profile_rejects_bad_values(kw: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        Profile(**kw)  # type: ignore[arg-type]


def test_endpoint_parse() -> None:
    assert wan.Endpoint.parse("inet-client:wan0") == wan.Endpoint("inet-client", "wan0")
    for bad in ["wan0", ":wan0", "ns:", "../x:wan0", "ns:" + "d" * 16]:
        with pytest.raises(ValueError):
            wan.Endpoint.parse(bad)


def test_cli_accepts_the_lab_command_line() -> None:
    args = wan.build_parser().parse_args(
        "--a inet-client:wan0 --b wan-router:wan0 --delay-ms 20 --jitter-ms 2 "
        "--jitter-dist normal --loss-pct 0.1 --seed 1 --stats-file /tmp/s.json "
        "--queue-limit 10000".split()
    )
    assert args.a == wan.Endpoint("inet-client", "wan0")
    assert (args.delay_ms, args.jitter_ms, args.loss_pct, args.seed) == (20, 2, 0.1, 1)
    assert args.queue_limit == 10000 and not args.allow_reorder


def test_cli_errors_are_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert wan.main(["--a", "x:wan0", "--b", "y:wan0", "--loss-pct", "150"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "loss_pct" in err
    with pytest.raises(SystemExit) as exc:
        wan.main(["--a", "nocolon", "--b", "y:wan0"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nocolon" in err


def test_missing_namespace_is_a_startup_error(capsys: pytest.CaptureFixture[str]) -> None:
    # Fails before any privileged call, so it runs unprivileged too.
    rc = wan.main(["--a", "no-such-ns-wan-test:wan0", "--b", "other-ns-wan-test:wan0"])
    assert rc == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no-such-ns-wan-test" in err


def test_stats_file_written_atomically(tmp_path: Path) -> None:
    path = tmp_path / "stats.json"
    dl = line(delay_ms=1.0, loss_pct=50.0)
    offer_many(dl, 100, MS)
    payload = wan.stats_payload(
        {"a_to_b": dl}, dl.profile, 9, {"a": "x:y", "b": "z:w"}, 0.0, running=True
    )
    wan.write_json_atomic(str(path), payload)
    data = json.loads(path.read_text())
    assert [p.name for p in tmp_path.iterdir()] == ["stats.json"]  # no temp file left over
    d = data["a_to_b"]
    assert d["received"] == 100 and d["lost"] + d["queued"] == 100 and d["lost"] > 0
    assert data["profile"]["seed"] == 9 and data["profile"]["loss_pct"] == 50.0
    assert data["running"] is True
