"""Userspace wide-area-path emulator: delay, jitter and loss between two TUN devices.

This kernel has no netem, so the lab joins the `inet-client` namespace to the rest of the
lab through a pair of persistent TUN devices (one per namespace) and this process moves IP
packets between them, holding each packet for a configured one-way delay (plus jitter) and
dropping some at random, in both directions, the way `tc qdisc ... netem` would.

Two layers, so the behaviour can be tested without root or TUN devices:

* `DelayLine` (with `Profile` and `release_time`) is the pure model: given an arrival time it
  decides, from a seeded RNG, whether the packet is lost, tail-dropped or when it leaves.
* `run()` is the I/O: attach to the TUNs (entering each namespace with setns), then one
  select() loop that reads packets into the two delay lines and writes them out when due.

Started by the lab as
    python -m pipeline.lab.wan --a inet-client:wan0 --b wan-router:wan0 --delay-ms 20 \
        --jitter-ms 2 --jitter-dist normal --loss-pct 0.1 --seed 1 [--stats-file PATH]
and runs until SIGTERM/SIGINT (exit 0). Startup problems: one line on stderr, exit 2. If a
device is deleted while running: one line on stderr, exit 1. Stop the emulator before
deleting the namespaces: its fds hold references that keep a deleted namespace (and its
device) alive until it exits.

Standard library only: it must stay dependency-free and start fast.
"""

from __future__ import annotations

import argparse
import ctypes
import errno
import fcntl
import heapq
import json
import os
import random
import select
import signal
import socket
import struct
import sys
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Literal, NoReturn

JitterDist = Literal["normal", "uniform"]
JITTER_DISTS: tuple[str, ...] = ("normal", "uniform")

# Linux constants (include/uapi/linux/if_tun.h, sched.h, prctl.h); Python has no names for them.
TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000
CLONE_NEWNET = 0x40000000
PR_SET_TIMERSLACK = 29

# Largest IP packet a TUN can hand us (IPv4/IPv6 total length is 16 bits). Reading with a
# smaller buffer would silently truncate packets on a device with a large MTU.
READ_SIZE = 65536
# Packets read from one fd before serving the other and releasing due packets: enough to
# amortise the select() call, small enough that one busy direction cannot starve the other.
READ_BATCH = 64
# The loop wakes at least this often even when idle, to write the stats file and to notice
# a signal promptly even if the wakeup fd were to miss it.
MAX_SLEEP_S = 0.5
STATS_INTERVAL_NS = 1_000_000_000

EXIT_OK = 0
EXIT_DEVICE_GONE = 1
EXIT_STARTUP = 2


# --------------------------------------------------------------------------------------------
# The model: pure decisions, no I/O
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Profile:
    """One direction's impairment, as netem would be configured (both directions share it)."""

    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    jitter_dist: JitterDist = "normal"
    loss_pct: float = 0.0
    queue_limit: int = 10_000
    allow_reorder: bool = False

    def __post_init__(self) -> None:
        # Validate here, not only in the CLI, so a bad params.yaml fails loudly in any caller.
        if self.delay_ms < 0:
            raise ValueError(f"delay_ms must be >= 0, got {self.delay_ms}")
        if self.jitter_ms < 0:
            raise ValueError(f"jitter_ms must be >= 0, got {self.jitter_ms}")
        if self.jitter_dist not in JITTER_DISTS:
            raise ValueError(f"jitter_dist must be one of {JITTER_DISTS}, got {self.jitter_dist!r}")
        if not 0.0 <= self.loss_pct <= 100.0:
            raise ValueError(f"loss_pct must be within [0, 100], got {self.loss_pct}")
        if self.queue_limit < 1:
            raise ValueError(f"queue_limit must be >= 1, got {self.queue_limit}")


def direction_rngs(seed: int, direction: str) -> tuple[random.Random, random.Random]:
    """Independent, reproducible (loss, jitter) RNG streams for one direction.

    Each direction gets its own streams so traffic in one direction never shifts the random
    decisions of the other; loss and jitter get separate streams so that changing the jitter
    of a profile does not change which packets are lost. String seeds are hashed with SHA-512
    by `random.seed`, so they are stable across runs and Python versions.
    """
    return (
        random.Random(f"wan:{seed}:{direction}:loss"),
        random.Random(f"wan:{seed}:{direction}:jitter"),
    )


def jitter_ns(profile: Profile, rng: random.Random) -> int:
    """Draw one packet's extra delay in ns (may be negative; the caller clips the total)."""
    if profile.jitter_ms <= 0:
        return 0  # no draw: a jitter-free profile consumes no randomness
    if profile.jitter_dist == "normal":
        return round(rng.gauss(0.0, profile.jitter_ms) * 1e6)
    return round(rng.uniform(-profile.jitter_ms, profile.jitter_ms) * 1e6)


def release_time(
    arrival_ns: int,
    delay_ns: int,
    extra_ns: int,
    prev_release_ns: int | None,
    allow_reorder: bool,
) -> int:
    """When a packet leaves: arrival + delay + jitter, clipped at the arrival time.

    Unless reordering is allowed, a packet never leaves before the one ahead of it in the
    same direction (netem's default for jitter without reorder): a real path with jitter
    mostly delays a burst, it rarely swaps its packets.
    """
    release = arrival_ns + max(0, delay_ns + extra_ns)
    if not allow_reorder and prev_release_ns is not None and release < prev_release_ns:
        release = prev_release_ns
    return release


@dataclass
class Counters:
    """Per-direction counts, as written to the stats file."""

    received: int = 0
    forwarded: int = 0
    lost: int = 0  # random (Bernoulli) loss
    queue_dropped: int = 0  # tail drop: the delay line already held queue_limit packets
    write_errors: int = 0  # the kernel refused the packet on the output TUN
    bytes_received: int = 0
    bytes_forwarded: int = 0


# What DelayLine.offer decided for one packet.
Verdict = Literal["queued", "lost", "queue_dropped"]


@dataclass
class DelayLine:
    """One direction of the path: decides each packet's fate and holds it until it is due.

    Release times are non-decreasing unless reordering is allowed, so a deque (FIFO) holds
    the packets in release order; with reordering a heap keyed on (release, sequence) does.
    """

    profile: Profile
    loss_rng: random.Random
    jitter_rng: random.Random
    counters: Counters = field(default_factory=Counters)
    _fifo: deque[tuple[int, bytes]] = field(default_factory=deque, repr=False)
    _heap: list[tuple[int, int, bytes]] = field(default_factory=list, repr=False)
    _seq: int = 0
    _last_release_ns: int | None = None

    @classmethod
    def create(cls, profile: Profile, seed: int, direction: str) -> DelayLine:
        loss_rng, jitter_rng = direction_rngs(seed, direction)
        return cls(profile, loss_rng, jitter_rng)

    def __post_init__(self) -> None:
        # Precomputed once: the per-packet path runs tens of thousands of times per second.
        self._delay_ns = round(self.profile.delay_ms * 1e6)
        self._loss_p = self.profile.loss_pct / 100.0

    def __len__(self) -> int:
        return len(self._heap) if self.profile.allow_reorder else len(self._fifo)

    def decide(self, arrival_ns: int) -> int | None:
        """The random part of a packet's fate: None if lost, else its release time.

        Loss is drawn before the queue is looked at (as netem does), and both draws happen
        whatever the queue holds, so the RNG streams, and with them every later decision,
        depend only on the seed and the packet count, not on timing.
        """
        if self._loss_p > 0 and self.loss_rng.random() < self._loss_p:
            return None
        return release_time(
            arrival_ns,
            self._delay_ns,
            jitter_ns(self.profile, self.jitter_rng),
            self._last_release_ns,
            self.profile.allow_reorder,
        )

    def offer(self, packet: bytes, arrival_ns: int) -> Verdict:
        """Take one packet that arrived at `arrival_ns` (monotonic ns)."""
        c = self.counters
        c.received += 1
        c.bytes_received += len(packet)
        release = self.decide(arrival_ns)
        if release is None:
            c.lost += 1
            return "lost"
        if len(self) >= self.profile.queue_limit:
            c.queue_dropped += 1
            return "queue_dropped"
        # Only a queued packet constrains the next one: a dropped packet never leaves.
        self._last_release_ns = release
        if self.profile.allow_reorder:
            self._seq += 1
            heapq.heappush(self._heap, (release, self._seq, packet))
        else:
            self._fifo.append((release, packet))
        return "queued"

    def next_release_ns(self) -> int | None:
        """Release time of the head packet, or None when the line is empty."""
        if self.profile.allow_reorder:
            return self._heap[0][0] if self._heap else None
        return self._fifo[0][0] if self._fifo else None

    def peek(self) -> bytes:
        return self._heap[0][2] if self.profile.allow_reorder else self._fifo[0][1]

    def pop(self) -> bytes:
        """Remove the head packet; the caller counts it forwarded or failed."""
        if self.profile.allow_reorder:
            return heapq.heappop(self._heap)[2]
        return self._fifo.popleft()[1]

    def due(self, now_ns: int) -> Iterator[bytes]:
        """Pop and yield every packet whose release time has come (counted as forwarded)."""
        while True:
            head = self.next_release_ns()
            if head is None or head > now_ns:
                return
            packet = self.pop()
            self.counters.forwarded += 1
            self.counters.bytes_forwarded += len(packet)
            yield packet


# --------------------------------------------------------------------------------------------
# Stats file
# --------------------------------------------------------------------------------------------


def write_json_atomic(path: str, payload: dict[str, object]) -> None:
    """Write JSON so a reader sees the old file or the new one, never half of one."""
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(payload, fh, indent=2, sort_keys=True)
        fh.write("\n")
    os.replace(tmp, path)


def stats_payload(
    lines: dict[str, DelayLine],
    profile: Profile,
    seed: int,
    endpoints: dict[str, str],
    started_unix: float,
    running: bool,
    kernel_drops: dict[str, KernelDrops] | None = None,
) -> dict[str, object]:
    payload: dict[str, object] = {}
    for name, line in lines.items():
        entry: dict[str, object] = {**asdict(line.counters), "queued": len(line)}
        if kernel_drops and name in kernel_drops:
            # Dropped by the kernel before we could read them (TUN queue full); None if the
            # counter could not be read.
            entry["kernel_ingress_dropped"] = kernel_drops[name].since_start()
        payload[name] = entry
    payload["profile"] = {**asdict(profile), "seed": seed}
    payload["endpoints"] = endpoints
    payload["pid"] = os.getpid()
    payload["started_unix"] = started_unix
    payload["updated_unix"] = time.time()
    payload["running"] = running
    return payload


# --------------------------------------------------------------------------------------------
# Attaching to the TUN devices
# --------------------------------------------------------------------------------------------


class StartupError(Exception):
    """A problem that prevents the emulator from starting; its message is shown to the user."""


@dataclass(frozen=True)
class Endpoint:
    netns: str
    dev: str

    @classmethod
    def parse(cls, text: str) -> Endpoint:
        netns, sep, dev = text.partition(":")
        if not sep or not netns or not dev or "/" in netns or len(dev) > 15:
            raise ValueError(f"expected NETNS:DEVICE (device name <= 15 chars), got {text!r}")
        return cls(netns, dev)

    def __str__(self) -> str:
        return f"{self.netns}:{self.dev}"


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _setns(fd: int, what: str) -> None:
    # Python 3.11 has no os.setns (added in 3.12). setns applies to the calling thread only,
    # which is fine: the emulator is single-threaded.
    if _libc().setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        hint = " (needs root: CAP_SYS_ADMIN)" if err == errno.EPERM else ""
        raise StartupError(f"cannot enter network namespace {what}: {os.strerror(err)}{hint}")


def reduce_timer_slack() -> None:
    """Ask for 1 ns timer slack: the default 50 us would add up to that much to every delay."""
    try:
        _libc().prctl(PR_SET_TIMERSLACK, ctypes.c_ulong(1), 0, 0, 0)
    except (OSError, AttributeError):
        pass  # best effort: only costs a little timing accuracy


class KernelDrops:
    """Reads the device's tx_dropped counter over rtnetlink, for the stats file.

    Packets the kernel could not hand to us because the TUN's queue (txqueuelen) was full,
    i.e. the emulator fell behind, are dropped before we ever see them. They are path loss
    all the same, so the stats report them next to our own counts. The netlink socket is
    created inside the device's namespace and keeps talking to that namespace afterwards,
    so no setns is needed later. Best effort: any failure reads as None.
    """

    RTM_GETLINK = 18
    RTM_NEWLINK = 16
    IFLA_STATS64 = 23
    TX_DROPPED_INDEX = 7  # rx_packets, tx_packets, rx_bytes, tx_bytes, rx_err, tx_err, rx_drop

    def __init__(self, ifindex: int) -> None:
        self.ifindex = ifindex
        self.sock: socket.socket | None = None
        try:
            self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)  # NETLINK_ROUTE
            self.sock.settimeout(0.2)
        except OSError:
            self.sock = None
        self.baseline = self.read()  # counts from before we attached are not ours

    def read(self) -> int | None:
        if self.sock is None:
            return None
        # nlmsghdr (len, type, flags=NLM_F_REQUEST, seq, pid) + ifinfomsg for one ifindex.
        req = struct.pack("=IHHII", 32, self.RTM_GETLINK, 1, 1, 0)
        req += struct.pack("=BBHiII", socket.AF_UNSPEC, 0, 0, self.ifindex, 0, 0)
        try:
            self.sock.send(req)
            data = self.sock.recv(65536)
        except OSError:
            return None
        if len(data) < 32 or struct.unpack_from("=H", data, 4)[0] != self.RTM_NEWLINK:
            return None
        msg_len = struct.unpack_from("=I", data, 0)[0]
        pos = 16 + 16  # past nlmsghdr and ifinfomsg
        while pos + 4 <= min(msg_len, len(data)):
            rta_len, rta_type = struct.unpack_from("=HH", data, pos)
            if rta_len < 4:
                return None
            if rta_type == self.IFLA_STATS64 and rta_len >= 4 + 8 * (self.TX_DROPPED_INDEX + 1):
                return struct.unpack_from("=Q", data, pos + 4 + 8 * self.TX_DROPPED_INDEX)[0]
            pos += (rta_len + 3) & ~3
        return None

    def since_start(self) -> int | None:
        now = self.read()
        if now is None or self.baseline is None:
            return None
        return now - self.baseline

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()


def open_tun(endpoint: Endpoint) -> tuple[int, KernelDrops]:
    """Open the persistent TUN `endpoint.dev` inside `endpoint.netns` (current netns kept).

    The fd is opened after entering the namespace because the kernel looks the device name
    up in the namespace of the process that opened /dev/net/tun. Once bound, the fd stays
    attached to that device whichever namespace this process is in later.
    """
    ns_path = f"/run/netns/{endpoint.netns}"
    try:
        own_ns = os.open("/proc/self/ns/net", os.O_RDONLY)
    except OSError as exc:
        raise StartupError(f"cannot open own network namespace: {exc.strerror}") from None
    try:
        try:
            target_ns = os.open(ns_path, os.O_RDONLY)
        except FileNotFoundError:
            raise StartupError(
                f"network namespace {endpoint.netns!r} not found ({ns_path} missing)"
            ) from None
        except OSError as exc:
            raise StartupError(f"cannot open {ns_path}: {exc.strerror}") from None
        try:
            _setns(target_ns, repr(endpoint.netns))
        finally:
            os.close(target_ns)
        try:
            return _attach(endpoint)
        finally:
            _setns(own_ns, "of this process (restoring)")
    finally:
        os.close(own_ns)


def _attach(endpoint: Endpoint) -> tuple[int, KernelDrops]:
    # TUNSETIFF on a name that does not exist would silently create a new, non-persistent
    # device that nothing routes to; check first so a missing device is reported instead.
    try:
        ifindex = socket.if_nametoindex(endpoint.dev)
    except OSError:
        raise StartupError(
            f"device {endpoint.dev!r} not found in network namespace {endpoint.netns!r}"
        ) from None
    try:
        fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    except OSError as exc:
        raise StartupError(f"cannot open /dev/net/tun: {exc.strerror}") from None
    ifr = struct.pack("16sH", endpoint.dev.encode(), IFF_TUN | IFF_NO_PI)
    try:
        fcntl.ioctl(fd, TUNSETIFF, ifr)
    except OSError as exc:
        os.close(fd)
        hint = {
            errno.EBUSY: " (already attached: is another emulator running?)",
            errno.EINVAL: " (not a TUN device, or created with other flags)",
            errno.EPERM: " (needs CAP_NET_ADMIN or the device owner)",
        }.get(exc.errno or 0, "")
        raise StartupError(f"cannot attach to TUN {endpoint}: {exc.strerror}{hint}") from None
    return fd, KernelDrops(ifindex)


# --------------------------------------------------------------------------------------------
# The event loop
# --------------------------------------------------------------------------------------------


class DeviceGone(Exception):
    """A TUN device vanished while running (deleted, or its namespace was deleted)."""


def _read_batch(fd: int, line: DelayLine, now_ns: int, endpoint: Endpoint) -> None:
    """Read up to READ_BATCH packets from `fd` into `line`."""
    read = os.read
    offer = line.offer
    for _ in range(READ_BATCH):
        try:
            packet = read(fd, READ_SIZE)
        except BlockingIOError:
            return
        except OSError as exc:
            # EBADFD: the device was deleted (or its namespace was) and the fd detached.
            # select() then reports the fd ready forever, so carrying on would spin.
            raise DeviceGone(f"device {endpoint} disappeared ({exc.strerror})") from None
        if not packet:
            return
        offer(packet, now_ns)
        # One timestamp per packet keeps per-packet delays exact within a burst; the
        # clock read is cheap (vDSO) next to the read syscall.
        now_ns = time.monotonic_ns()


def _flush(line: DelayLine, out_fd: int, now_ns: int) -> bool:
    """Write every due packet. Returns True if the output fd pushed back (retry later)."""
    write = os.write
    while True:
        head = line.next_release_ns()
        if head is None or head > now_ns:
            return False
        try:
            write(out_fd, line.peek())
        except BlockingIOError:
            return True  # keep the packet at the head; wait for POLLOUT
        except OSError:
            # The kernel rejected it (device down, malformed packet): drop and count, as a
            # router would, rather than wedge the whole direction on one packet.
            line.pop()
            line.counters.write_errors += 1
            continue
        packet = line.pop()
        line.counters.forwarded += 1
        line.counters.bytes_forwarded += len(packet)


def run(
    a: Endpoint,
    b: Endpoint,
    profile: Profile,
    seed: int,
    stats_file: str | None = None,
) -> int:
    """Attach, forward until SIGTERM/SIGINT, write final stats; return the exit code."""
    reduce_timer_slack()
    if stats_file:
        # Fail at startup, not silently later, if the stats file can never be written.
        try:
            write_json_atomic(stats_file, {"running": False, "starting": True})
        except OSError as exc:
            raise StartupError(f"cannot write stats file {stats_file}: {exc.strerror}") from None
    fd_a, drops_a = open_tun(a)
    try:
        fd_b, drops_b = open_tun(b)
    except StartupError:
        os.close(fd_a)
        drops_a.close()
        raise
    # Kernel-side drops at a direction's ingress: the TUN queue packets wait in for us.
    kernel_drops = {"a_to_b": drops_a, "b_to_a": drops_b}

    ab = DelayLine.create(profile, seed, "a_to_b")
    ba = DelayLine.create(profile, seed, "b_to_a")
    lines = {"a_to_b": ab, "b_to_a": ba}
    endpoints = {"a": str(a), "b": str(b)}
    started_unix = time.time()

    # Self-pipe: the signal handler only sets a flag; the wakeup fd makes select() return
    # at once (PEP 475 would otherwise silently restart it with the old timeout).
    stop = False
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    old_handlers = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    old_wakeup = signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)

    stats_warned = False

    def dump(running: bool) -> None:
        nonlocal stats_warned
        if not stats_file:
            return
        try:
            write_json_atomic(
                stats_file,
                stats_payload(lines, profile, seed, endpoints, started_unix, running, kernel_drops),
            )
        except OSError as exc:
            # Stats are for the record, the path is what matters: warn once, keep forwarding.
            if not stats_warned:
                print(f"pipeline.lab.wan: cannot write {stats_file}: {exc}", file=sys.stderr)
                stats_warned = True

    try:
        dump(True)
        next_stats_ns = time.monotonic_ns() + STATS_INTERVAL_NS
        # Output fds that returned EAGAIN: wait until writable instead of spinning.
        blocked: dict[int, DelayLine] = {}
        readers = [fd_a, fd_b, wake_r]
        while not stop:
            now = time.monotonic_ns()
            timeout_ns = int(MAX_SLEEP_S * 1e9)
            for line, out_fd in ((ab, fd_b), (ba, fd_a)):
                if out_fd in blocked:
                    continue
                head = line.next_release_ns()
                if head is not None:
                    timeout_ns = min(timeout_ns, max(0, head - now))
            # select(), not poll(): its timeout has microsecond resolution, poll's only
            # millisecond, which would add up to 1 ms to every delayed packet.
            r, w, _ = select.select(readers, list(blocked), [], timeout_ns / 1e9)
            now = time.monotonic_ns()
            for fd in w:
                del blocked[fd]
            if wake_r in r:
                try:
                    while os.read(wake_r, 512):
                        pass
                except BlockingIOError:
                    pass
            if fd_a in r:
                _read_batch(fd_a, ab, now, a)
            if fd_b in r:
                _read_batch(fd_b, ba, now, b)
            now = time.monotonic_ns()
            if fd_b not in blocked and _flush(ab, fd_b, now):
                blocked[fd_b] = ab
            if fd_a not in blocked and _flush(ba, fd_a, now):
                blocked[fd_a] = ba
            if stats_file and now >= next_stats_ns:
                dump(True)
                next_stats_ns = now + STATS_INTERVAL_NS
    finally:
        signal.set_wakeup_fd(old_wakeup)
        for sig, handler in old_handlers.items():
            signal.signal(sig, handler)
        for fd in (fd_a, fd_b, wake_r, wake_w):
            os.close(fd)
        dump(False)
        for kd in kernel_drops.values():
            kd.close()
    return EXIT_OK


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------


def _endpoint_arg(text: str) -> Endpoint:
    try:
        return Endpoint.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class _OneLineParser(argparse.ArgumentParser):
    """Usage errors as one line on stderr (exit 2), like every other startup error: the lab
    logs the emulator's stderr and a multi-line usage dump would bury the actual problem."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_STARTUP, f"pipeline.lab.wan: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    p = _OneLineParser(
        prog="python -m pipeline.lab.wan",
        description="Userspace WAN emulator between two persistent TUN devices "
        "(delay, jitter and loss applied to each direction).",
    )
    p.add_argument("--a", required=True, type=_endpoint_arg, metavar="NETNS:DEV")
    p.add_argument("--b", required=True, type=_endpoint_arg, metavar="NETNS:DEV")
    p.add_argument("--delay-ms", type=float, default=0.0, help="one-way delay per direction")
    p.add_argument(
        "--jitter-ms",
        type=float,
        default=0.0,
        help="normal: standard deviation; uniform: half-width",
    )
    p.add_argument("--jitter-dist", choices=JITTER_DISTS, default="normal")
    p.add_argument("--loss-pct", type=float, default=0.0, help="independent loss per packet")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument(
        "--queue-limit",
        type=int,
        default=10_000,
        help="packets held per direction; more are tail-dropped",
    )
    p.add_argument(
        "--allow-reorder",
        action="store_true",
        help="let jitter reorder packets (default: keep order, like netem)",
    )
    p.add_argument("--stats-file", default=None, help="JSON counters, rewritten each second")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    prog = "pipeline.lab.wan"
    try:
        profile = Profile(
            delay_ms=args.delay_ms,
            jitter_ms=args.jitter_ms,
            jitter_dist=args.jitter_dist,
            loss_pct=args.loss_pct,
            queue_limit=args.queue_limit,
            allow_reorder=args.allow_reorder,
        )
    except ValueError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return EXIT_STARTUP
    if args.a == args.b:
        print(f"{prog}: --a and --b are the same device ({args.a})", file=sys.stderr)
        return EXIT_STARTUP
    try:
        return run(args.a, args.b, profile, args.seed, args.stats_file)
    except StartupError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return EXIT_STARTUP
    except DeviceGone as exc:
        # Not a requested stop, so not exit 0: the lab should SIGTERM us before teardown.
        print(f"{prog}: {exc}; stopping", file=sys.stderr)
        return EXIT_DEVICE_GONE


if __name__ == "__main__":
    sys.exit(main())
