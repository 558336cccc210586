#!/usr/bin/env python3
"""Time a Swarm (or Kubernetes) command until enough of a service's tasks accept TCP connections.

Runs on the Swarm manager inside the network namespace of a probe container attached to the
service's overlay network (``nsenter --net=/proc/PID/ns/net python3 THIS ...``), so it sees the
network as a client container does: Docker's embedded DNS at 127.0.0.11 and the task
addresses. The Swarm VIP and routing mesh need IPVS, so the service uses ``--endpoint-mode
dnsrr`` and the probe dials every task address ``tasks.<service>`` returns.

    accept: start the clock, run the command after ``--`` (if any), then every ``--interval``
            resolve the name and try a TCP connect to each address that has not accepted yet;
            done when ``--want`` distinct addresses have accepted on ``--port``.
    settle: no clock worth keeping: done when the name resolves to exactly ``--want``
            addresses and every one of them accepts in the same poll (between repetitions).

With ``--watch COMMAND`` instead of ``--name`` the addresses come from a watch (Kubernetes pods:
``kubectl get pods --watch --output-watch-events``, see Watcher); the probe then runs where the
pod addresses are routed (a node), with no namespace to enter.

Output, one event per line (pipeline/benchmarks/orchestration.py parses it):

    probe 1 mode=accept name=tasks.x port=5201 want=10 timeout_s=120 interval_s=0.01
    command 0.0812 status=0
    accept 0.6124 10.0.1.7
    done 1.2345 accepted=10 want=10 records=10 polls=98
or  timeout 120.0007 accepted=7 want=10 records=8 polls=9000
or  command_failed 0.0731 status=1 error=<the command's stderr, one line>

Times are seconds from just before the command was started (time.monotonic). Every wait is
bounded by ``--timeout``; the exit status is 0 for done, 1 for timeout or a failed command.
Standard library only: it runs with the host's python3.
"""

from __future__ import annotations

import argparse
import atexit
import errno
import os
import random
import select
import selectors
import shlex
import socket
import struct
import subprocess
import sys
import time

FORMAT = 1
DNS_SERVER = ("127.0.0.11", 53)  # Docker's embedded DNS inside a container's namespace
MAX_OUTSTANDING = 512
CONNECT_TIMEOUT_S = 0.05  # per poll: an address not answering by then is tried next poll


def dns_query(name: str, qid: int) -> bytes:
    """An A query with an EDNS0 record offering 4096-byte answers: 50 addresses do not fit in
    plain DNS's 512 bytes and Docker's resolver would truncate."""
    header = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 1)  # RD, one question, one OPT
    labels = b"".join(bytes([len(p)]) + p.encode() for p in name.rstrip(".").split("."))
    question = labels + b"\x00" + struct.pack(">HH", 1, 1)  # A, IN
    opt = b"\x00" + struct.pack(">HHIH", 41, 4096, 0, 0)
    return header + question + opt


def _skip_name(msg: bytes, i: int) -> int:
    while True:
        length = msg[i]
        if length == 0:
            return i + 1
        if length & 0xC0 == 0xC0:  # compression pointer ends the name
            return i + 2
        i += 1 + length


def parse_a_records(msg: bytes, qid: int) -> list[str] | None:
    """The A records of an answer; [] for NXDOMAIN or no records, None for a reply that is not
    ours or is truncated (the poll then counts as having learned nothing)."""
    if len(msg) < 12:
        return None
    rid, flags, qd, an = struct.unpack(">HHHH", msg[:8])
    if rid != qid or flags & 0x0200:  # another query's reply, or TC: truncated
        return None
    if flags & 0x000F not in (0, 3):  # rcode: NOERROR or NXDOMAIN (no task yet)
        return None
    i = 12
    for _ in range(qd):
        i = _skip_name(msg, i) + 4
    found = []
    for _ in range(an):
        i = _skip_name(msg, i)
        rtype, _cls, _ttl, rdlen = struct.unpack(">HHIH", msg[i : i + 10])
        i += 10
        if rtype == 1 and rdlen == 4:
            found.append(socket.inet_ntoa(msg[i : i + 4]))
        i += rdlen
    return found


class Resolver:
    """Asks Docker's DNS every poll without waiting for lost answers: a name Docker does not
    know yet is forwarded to the host's resolvers, which may never answer (the lab has none),
    and waiting for that would stretch the poll interval. Replies to earlier queries still
    count when they are newer than what was applied."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setblocking(False)
        self.sent: dict[int, int] = {}  # query id -> sequence number
        self.seq = 0
        self.applied = -1

    def ask(self) -> int:
        self.seq += 1
        qid = random.randrange(1 << 16)
        while qid in self.sent:
            qid = random.randrange(1 << 16)
        self.sent[qid] = self.seq
        if len(self.sent) > MAX_OUTSTANDING:  # forget the oldest unanswered queries
            for old in sorted(self.sent, key=self.sent.get)[: len(self.sent) - MAX_OUTSTANDING]:
                del self.sent[old]
        self.sock.sendto(dns_query(self.name, qid), DNS_SERVER)
        return self.seq

    def collect(self, until: float, seq: int) -> list[str] | None:
        """The newest records answered before ``until`` (returning early once query ``seq``
        is answered), or None when no newer answer came."""
        newest = None
        while (left := until - time.monotonic()) > 0:
            if not select.select([self.sock], [], [], left)[0]:
                break
            msg = self.sock.recv(65535)
            qid = int.from_bytes(msg[:2], "big") if len(msg) >= 2 else -1
            if qid not in self.sent:
                continue
            answered = self.sent.pop(qid)
            records = parse_a_records(msg, qid)
            if records is not None and answered > self.applied:
                self.applied, newest = answered, records
            if answered == seq:
                break
        return newest


class Watcher:
    """The addresses a watch command reports (Kubernetes: ``kubectl get pods --watch
    --output-watch-events -o jsonpath=...``), one event a line: ``TYPE NAME [ADDRESS]``, TYPE
    ADDED, MODIFIED or DELETED. Every poll returns the addresses of the objects that exist and
    have one (a pod has none until it is scheduled and its sandbox is up)."""

    def __init__(self, command: list[str]) -> None:
        self.proc = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL
        )
        self.buffer = b""
        self.objects: dict[str, str] = {}

    def apply(self, line: str) -> None:
        parts = line.split()
        if len(parts) < 2:
            return
        kind, name = parts[0], parts[1]
        if kind == "DELETED":
            self.objects.pop(name, None)
        elif kind in ("ADDED", "MODIFIED"):
            self.objects[name] = parts[2] if len(parts) > 2 else ""

    def collect(self, until: float, _seq: int = 0) -> list[str] | None:
        """Apply what the watch printed before ``until``; the current addresses (None once the
        watch has ended: nothing more will be learned)."""
        fd = self.proc.stdout.fileno()
        while (left := until - time.monotonic()) > 0:
            if not select.select([fd], [], [], left)[0]:
                break
            chunk = os.read(fd, 65536)
            if not chunk:
                return None if not self.objects else self.addresses()
            self.buffer += chunk
            *lines, self.buffer = self.buffer.split(b"\n")
            for line in lines:
                self.apply(line.decode(errors="replace"))
        return self.addresses()

    def addresses(self) -> list[str]:
        return sorted({a for a in self.objects.values() if a})

    def ask(self) -> int:
        return 0

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def accepting(addresses: list[str], port: int) -> set[str]:
    """The addresses whose TCP connect completes within CONNECT_TIMEOUT_S, tried in parallel
    (an address whose overlay forwarding is not programmed yet would otherwise stall the
    poll). The connection is closed at once: accepting is all we ask of the server."""
    selector = selectors.DefaultSelector()
    ok: set[str] = set()
    for address in addresses:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        code = s.connect_ex((address, port))
        if code == 0:
            ok.add(address)
            s.close()
        elif code == errno.EINPROGRESS:
            selector.register(s, selectors.EVENT_WRITE, address)
        else:
            s.close()
    deadline = time.monotonic() + CONNECT_TIMEOUT_S
    while selector.get_map() and (left := deadline - time.monotonic()) > 0:
        for key, _ in selector.select(left):
            s = key.fileobj
            if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                ok.add(key.data)
            selector.unregister(s)
            s.close()
    for key in list(selector.get_map().values()):
        key.fileobj.close()
    selector.close()
    return ok


def main(argv: list[str]) -> int:
    if "--" in argv:
        split = argv.index("--")
        argv, command = argv[:split], argv[split + 1 :]
    else:
        command = []
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=("accept", "settle"), default="accept")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--name", help="a DNS name whose A records are the addresses")
    source.add_argument("--watch", help="a command whose events give the addresses (Watcher)")
    parser.add_argument("--watch-start", type=float, default=1.0,
                        help="seconds the watch gets to connect before the clock starts")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--want", type=int, required=True)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--interval", type=float, default=0.01)
    args = parser.parse_args(argv)
    source = f"name={args.name}" if args.name else "name=watch"
    print(
        f"probe {FORMAT} mode={args.mode} {source} port={args.port} want={args.want} "
        f"timeout_s={args.timeout:g} interval_s={args.interval:g}",
        flush=True,
    )
    if args.watch:
        dns = Watcher(shlex.split(args.watch))
        atexit.register(dns.close)
        # the watch lists what exists, then streams changes: let it connect before the clock
        dns.collect(time.monotonic() + args.watch_start)
    else:
        dns = Resolver(args.name)
    t0 = time.monotonic()
    proc = (
        subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL
        )
        if command
        else None
    )
    accepted: dict[str, float] = {}
    records: list[str] = []
    polls = 0
    while True:
        now = time.monotonic() - t0
        if proc is not None and proc.poll() is not None:
            error = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            if proc.returncode != 0:
                line = " ".join(error.split()) or "(no output)"
                print(f"command_failed {now:.4f} status={proc.returncode} error={line}")
                return 1
            print(f"command {now:.4f} status=0", flush=True)
            proc = None
        if now > args.timeout:
            print(
                f"timeout {now:.4f} accepted={len(accepted)} want={args.want} "
                f"records={len(records)} polls={polls}"
            )
            if proc is not None:
                proc.kill()
            return 1
        polls += 1
        until = time.monotonic() + args.interval
        found = dns.collect(until, dns.ask())
        if found is not None:
            records = found
            if args.mode == "accept":
                pending = [a for a in records if a not in accepted]
                for address in sorted(accepting(pending, args.port)):
                    accepted[address] = time.monotonic() - t0
                    print(f"accept {accepted[address]:.4f} {address}", flush=True)
                finished = len(accepted) >= args.want
            else:
                finished = len(records) == args.want and len(accepting(records, args.port)) == len(
                    records
                )
                if finished:
                    accepted = {a: time.monotonic() - t0 for a in records}
            if finished and proc is None:
                end = max(accepted.values()) if args.mode == "accept" else time.monotonic() - t0
                print(
                    f"done {end:.4f} accepted={len(accepted)} want={args.want} "
                    f"records={len(records)} polls={polls}"
                )
                return 0
        time.sleep(max(0.0, until - time.monotonic()))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
