#!/usr/bin/env python3
"""Cold-start timer for the `coldstart` benchmark; runs ON the server host (python3, stdlib only).

For each start: take a monotonic timestamp, run the start command (an engine's `run -d`, or
the server itself for native), and once `run -d` has returned (native: at once) probe the
published port at the host's address every ~1 ms until the server answers; the elapsed time
from the timestamp is the sample: what a user's `docker run -d ...` followed by a wait for the
port waits. Then remove the container (or stop the process), untimed, and wait until the port
refuses connections again.

"Ready" means the server answered a request (`GET /` -> a reply starting with ``HTTP/``), not
merely that connect() succeeded: docker-proxy, rootlesskit's builtin port driver and podman's
rootlessport accept on the host port as soon as the container exists and only then dial the
server inside, closing the connection when nothing listens there yet.

Why not probe while `run -d` is still running: a probe sent before the engine has wired the
container's interface makes the host ARP for the container's address unanswered, the
neighbour entry stays INCOMPLETE until the kernel's next ARP retry 1 s later, and every
start then measured ~1.1 s instead of ~0.4 s (seen on the lab's docker 20.10 bridge).

Output (one line each, parsed by pipeline.benchmarks.coldstart.parse_coldstart):
  coldstart 1 address=A port=P starts=N warmup=W timeout_s=T interval_ms=I
  start-cmd <JSON argv, @NAME@ = the start's name>
  stop-cmd <JSON argv, or "signal" for native>
  start <i> <warmup 0|1> ok <ready_ns> at_ns=<t0 from the first start> cli_ns=<..> probes=<n>
  start <i> <warmup 0|1> failed <reason>      (then the script stops)
  end ok <count> | end failed
"""

import argparse
import errno
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import time

FORMAT = 1
NAME = "@NAME@"
REQUEST = b"GET / HTTP/1.0\r\n\r\n"
REPLY = b"HTTP/"
CONNECT_AGE_NS = 100_000_000  # a probe still connecting after this is dropped (SYN lost)
REPLY_AGE_NS = 1_000_000_000  # a probe a proxy accepted gets this long for the reply
MAX_OPEN = 256
PROBE_TIMEOUT_S = 1.0  # the port-free check's connect
FREE_TIMEOUT_S = 30.0  # after a removal: the port must refuse connections within this


class Prober:
    """Non-blocking probes, a new one every interval while older ones are still pending.

    A blocking connect() would stall on a dropped SYN (the kernel retries it only after 1 s)
    and a blocking read on a proxy that accepted but has not reached the server yet, either
    quantising the measurement to its timeout; instead a fresh socket goes out every interval,
    and each probe that connects sends the request and waits for the reply, alongside the
    others."""

    def __init__(self, address: str, port: int, interval_s: float) -> None:
        self.target = (address, port)
        self.interval_ns = int(interval_s * 1e9)
        self.sel = selectors.DefaultSelector()
        self.open = {}  # socket -> [opened_ns, "connect" | "reply", bytes received]
        self.count = 0

    def _new(self, now: int) -> None:
        self.count += 1
        s = socket.socket(socket.AF_INET6 if ":" in self.target[0] else socket.AF_INET)
        s.setblocking(False)
        if s.connect_ex(self.target) not in (0, errno.EINPROGRESS):
            s.close()  # refused at once: nothing listens and nothing forwards yet
            return
        self.open[s] = [now, "connect", b""]
        self.sel.register(s, selectors.EVENT_WRITE)

    def _close(self, s: socket.socket) -> None:
        self.sel.unregister(s)
        del self.open[s]
        s.close()

    def close(self) -> None:
        for s in list(self.open):
            self._close(s)

    def _event(self, s: socket.socket) -> bool:
        """Advance one probe; True when the server's reply has arrived."""
        state = self.open[s]
        try:
            if state[1] == "connect":
                if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                    raise OSError("connect failed")
                s.send(REQUEST)
                state[1] = "reply"
                self.sel.modify(s, selectors.EVENT_READ)
                return False
            data = s.recv(64)
        except OSError:
            data = b""
        state[2] += data
        if state[2].startswith(REPLY):
            return True
        if not data or not REPLY.startswith(state[2]):
            self._close(s)  # a proxy gave up on the server (or garbage): not ready
        return False

    def wait(self, deadline_ns: int, check) -> int:
        """The monotonic ns at which the first reply arrived; ``check()`` raises to give up."""
        next_ns = time.monotonic_ns()
        try:
            while True:
                now = time.monotonic_ns()
                if now >= deadline_ns:
                    raise TimeoutError(f"no answer on {self.target[0]}:{self.target[1]}")
                check(now)
                if now >= next_ns and len(self.open) < MAX_OPEN:
                    self._new(now)
                    next_ns = now + self.interval_ns
                for s, (opened, state, _) in list(self.open.items()):
                    if now - opened > (CONNECT_AGE_NS if state == "connect" else REPLY_AGE_NS):
                        self._close(s)
                wait_s = max(0, min(next_ns, deadline_ns) - time.monotonic_ns()) / 1e9
                for key, _ in self.sel.select(wait_s):
                    if key.fileobj in self.open and self._event(key.fileobj):
                        return time.monotonic_ns()
        finally:
            self.close()


def port_refuses(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=PROBE_TIMEOUT_S):
            return False
    except ConnectionRefusedError:
        return True
    except OSError:  # a timeout: something still holds the port (or drops): not free yet
        return False


def wait_free(address: str, port: int) -> bool:
    deadline = time.monotonic() + FREE_TIMEOUT_S
    while time.monotonic() < deadline:
        if port_refuses(address, port):
            return True
        time.sleep(0.005)
    return False


def substitute(argv: list, name: str) -> list:
    return [a.replace(NAME, name) for a in argv]


class Start:
    """One start: launch, probe until ready, report; ``stop`` undoes it (untimed)."""

    def __init__(self, args: argparse.Namespace, index: int) -> None:
        self.args = args
        self.name = f"{args.name_prefix}-{index:04d}"
        self.proc = None
        self.pidfile = f"{args.pidfile_stem}-{index:04d}.pid" if args.pidfile_stem else None

    def launch(self) -> None:
        argv = substitute(self.args.start_argv, self.name)
        if self.args.native:
            # its own session: the stop signals the server only; stdout/stderr to a log so it
            # never holds the SSH channel open
            log = open(f"{self.pidfile[:-4]}.log" if self.pidfile else os.devnull, "wb")
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True
            )
            log.close()
            if self.pidfile:  # cleanup_host kills it from this file after a crash
                with open(self.pidfile, "w") as f:
                    f.write(f"{self.proc.pid}\n")
        else:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.args.native:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(10)
            for path in (self.pidfile, self.pidfile and f"{self.pidfile[:-4]}.log"):
                if path and os.path.exists(path):
                    os.remove(path)
        else:
            if self.proc.poll() is None:  # a hung CLI: its container is removed below anyway
                self.proc.kill()
            self.proc.communicate()
            stop = substitute(self.args.stop_argv, self.name)
            subprocess.run(stop, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=120, check=False)  # fmt: skip
        self.proc = None

    def measure(self) -> tuple[int, int, int]:
        """(ready_ns, cli_ns, probes) from the launch; raises RuntimeError on a failed start."""
        a = self.args
        t0 = time.monotonic_ns()
        self.launch()
        deadline = t0 + int(a.timeout * 1e9)
        cli_ns = -1
        if not a.native:  # probes start when `run -d` has returned (module docstring)
            try:
                self.proc.wait(max(0.0, (deadline - time.monotonic_ns()) / 1e9))
            except subprocess.TimeoutExpired:
                msg = f"the run command did not return within {a.timeout:g} s"
                raise RuntimeError(msg) from None
            cli_ns = time.monotonic_ns() - t0
            if self.proc.returncode != 0:
                raise RuntimeError(self.exit_reason())

        def check(now: int) -> None:
            if a.native and self.proc.poll() is not None:
                raise RuntimeError(self.exit_reason())

        prober = Prober(a.address, a.port, a.interval_ms / 1000)
        try:
            ready_ns = prober.wait(deadline, check) - t0
        except TimeoutError as exc:
            raise RuntimeError(f"{exc} within {a.timeout:g} s of the start") from None
        return ready_ns, cli_ns, prober.count

    def exit_reason(self) -> str:
        what = "server" if self.args.native else "run command"
        if self.args.native:
            log = f"{self.pidfile[:-4]}.log" if self.pidfile else ""
            err = open(log, "rb").read() if log and os.path.exists(log) else b""
        else:
            err = self.proc.communicate()[1] or b""
        text = " ".join(err.decode(errors="replace").split())[-300:]
        return f"{what} exited {self.proc.returncode}: {text}".strip()


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--address", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--starts", type=int, required=True)
    p.add_argument("--warmup", type=int, default=0)
    p.add_argument("--timeout", type=float, default=30.0)
    p.add_argument("--interval-ms", type=float, default=1.0)
    p.add_argument("--name-prefix", required=True)
    p.add_argument("--pidfile-stem", default="")
    p.add_argument("--start", dest="start_argv", type=json.loads, required=True)
    p.add_argument("--stop", dest="stop_argv", type=json.loads, default=None)
    return p


def main() -> int:
    args = parser().parse_args()
    args.native = args.stop_argv is None
    # a closed SSH channel (HUP) or a kill (TERM) unwinds through the per-start clean-up
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, frame: sys.exit(128 + signum))
    total = args.warmup + args.starts
    if args.pidfile_stem:
        os.makedirs(os.path.dirname(args.pidfile_stem), exist_ok=True)
    print(
        f"coldstart {FORMAT} address={args.address} port={args.port} starts={args.starts} "
        f"warmup={args.warmup} timeout_s={args.timeout:g} interval_ms={args.interval_ms:g}"
    )
    print(f"start-cmd {json.dumps(args.start_argv)}")
    print(f"stop-cmd {json.dumps(args.stop_argv) if args.stop_argv else 'signal'}", flush=True)
    if not wait_free(args.address, args.port):
        print(f"start 0 {int(args.warmup > 0)} failed port {args.port} busy before the first start")
        print("end failed")
        return 1
    first = time.monotonic_ns()
    for i in range(total):
        start = Start(args, i)
        warm = int(i < args.warmup)
        at_ns = time.monotonic_ns() - first
        try:
            ready_ns, cli_ns, probes = start.measure()
        except (RuntimeError, OSError) as exc:
            print(f"start {i} {warm} failed {' '.join(str(exc).split())}", flush=True)
            start.stop()
            print("end failed")
            return 1
        except BaseException:  # interrupted: leave nothing running
            start.stop()
            raise
        print(f"start {i} {warm} ok {ready_ns} at_ns={at_ns} cli_ns={cli_ns} probes={probes}",
              flush=True)  # fmt: skip
        start.stop()
        if not wait_free(args.address, args.port):
            print(f"start {i + 1} {int(i + 1 < args.warmup)} failed port {args.port} still "
                  f"answers {FREE_TIMEOUT_S:g} s after the removal")  # fmt: skip
            print("end failed")
            return 1
    print(f"end ok {total}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
