"""SSH to the inventory's hosts with paramiko: run commands, copy files, strict host keys.

Security rules (the study runs as root on real machines, so these are not optional):

- key authentication only: the key named by the inventory, no agent, no ``~/.ssh/id_*``
  discovery, no passwords;
- host keys come only from the inventory's ``known_hosts`` file and an unknown or changed
  key is refused (never auto-added, and the user's ``~/.ssh/known_hosts`` is not consulted
  unless the inventory names it);
- every network wait is bounded: connect, banner, auth and each command have timeouts.

Decisions:

- A ``list`` command is quoted with :func:`shlex.join`, so arguments arrive intact; a ``str``
  command is the caller's shell text and is sent as-is.
- ``env`` is applied as ``export K=V;`` in front of the command rather than with SSH
  ``env`` requests, because sshd silently drops those unless ``AcceptEnv`` allows them.
- As with ``ssh``, a command is finished when it has exited *and* its stdout/stderr are
  closed: a background process that inherits them (``server &``) keeps the command running
  until the timeout. Redirect background processes' output (``server >log 2>&1 &``).
- Without ``stdin`` the command's stdin is closed at once (like ``ssh -n``) so a command that
  reads stdin gets EOF instead of hanging until the timeout.
- A timed-out command is killed, not just abandoned: a leftover iperf3 or fio would load the
  host during the next measurement. Each command is sent with a per-run marker in its
  environment (``export PIPELINE_RUN_ID=<random>;``, not part of ``Result.command``); on
  timeout the SSH ``signal`` request (KILL) goes to the command's top process and a second
  channel SIGKILLs every process whose environment carries the marker (Linux ``/proc``,
  best effort). Processes that drop their environment (containers started by a daemon)
  are not reached: the modes' stop/cleanup removes those.
- A command that needs root says so (``root="<what it does>"``). A root login runs it as it
  is; another login runs it as ``sudo -n -- bash -c '<command>'`` when the inventory allows
  sudo (``-n``: a password prompt fails at once instead of hanging), and otherwise it is not
  sent at all: :class:`NeedsRoot` names the privilege, and the campaign records the step as
  skipped with it. The run marker is exported inside the sudo shell, where the timeout sweep
  (itself run through sudo) finds it.
- A :class:`Session` does not reconnect by itself; :class:`Pool` replaces a session whose
  connection died the next time that host is asked for.
"""

from __future__ import annotations

import os
import re
import secrets
import select
import shlex
import socket
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import paramiko
from paramiko.common import cMSG_CHANNEL_REQUEST
from paramiko.message import Message

from pipeline.collect.inventory import Host, Inventory, known_hosts_problem, readable_fix
from pipeline.hosts import NeedsRoot, RemoteError, UnreachableHost

__all__ = ["NeedsRoot", "Pool", "RemoteError", "Result", "Session", "UnreachableHost"]

ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
LAB_HINT = "for the embedded lab run `python -m pipeline.lab up`"
RUN_ID_VAR = "PIPELINE_RUN_ID"
KILL_TIMEOUT_S = 10.0


@dataclass
class Result:
    host: str
    command: str
    status: int
    stdout: str
    stderr: str
    seconds: float


class _UnknownHostKey(paramiko.SSHException):
    def __init__(self, hostname: str, key: paramiko.PKey):
        self.hostname = hostname
        self.key = key
        super().__init__(f"Server {hostname!r} not found in known_hosts")


class _StrictPolicy(paramiko.RejectPolicy):
    """RejectPolicy that keeps the offered key, so the error can show its fingerprint."""

    def missing_host_key(self, client, hostname, key):  # noqa: ANN001 (paramiko's signature)
        raise _UnknownHostKey(hostname, key)


def _fingerprint(key: paramiko.PKey) -> str:
    return f"{key.get_name()} {key.fingerprint}"


class Session:
    """One SSH connection to one host, reused for many commands (one channel each).

    Thread-safe for concurrent :meth:`run` calls: each opens its own channel on the shared
    transport.
    """

    def __init__(self, host: Host, *, lab: bool = False, inventory: Path | None = None):
        self.host = host
        self._lab = lab
        self._inventory = inventory
        self._sftp: paramiko.SFTPClient | None = None
        self._lock = threading.Lock()
        self._client = self._connect()

    # -- connection ---------------------------------------------------------------------

    def _fail(self, cause: str, fix: str, command: str = "") -> UnreachableHost:
        if self._lab and "pipeline.lab" not in fix:
            fix = f"{fix} ({LAB_HINT})"
        return UnreachableHost(
            self.host.name, f"{self.host.address}:{self.host.ssh.port}", cause, fix,
            command=command,
        )

    def _connect(self) -> paramiko.SSHClient:
        h, s = self.host, self.host.ssh
        kh = s.known_hosts
        where = f" in {self._inventory}" if self._inventory else ""
        try:
            pkey = paramiko.PKey.from_path(s.key_file)
        except (paramiko.PasswordRequiredException, TypeError):
            # paramiko raises TypeError ("password was not provided") for an encrypted
            # OpenSSH or PEM key; its text is about the format, never the key.
            raise self._fail(
                f"private key {s.key_file} is encrypted (it has a passphrase)",
                f"name a key without a passphrase as ssh.key_file{where} (the study logs in "
                "unattended and does not use an agent): `ssh-keygen -t ed25519 -N '' -f "
                "KEYFILE`, then authorize its .pub on the host",
            ) from None
        except FileNotFoundError:
            raise self._fail(
                f"private key {s.key_file} does not exist",
                "fix ssh.key_file in the inventory",
            ) from None
        except (OSError, paramiko.SSHException, ValueError) as e:
            # The exception text is paramiko's, about the format; never the key content.
            raise self._fail(
                f"cannot load private key {s.key_file} ({type(e).__name__})",
                "point ssh.key_file at an OpenSSH/PEM private key readable by this user",
            ) from None

        client = paramiko.SSHClient()
        # paramiko fails on a whole file holding a marker and never matches a pattern
        if (unsupported := known_hosts_problem(kh, h.address, s.port)) is not None:
            raise self._fail(*unsupported)
        # Only the inventory's file; get_host_keys().load() (unlike load_host_keys) does not
        # remember the file name, so nothing could ever be written back to it.
        try:
            client.get_host_keys().load(str(kh))
        except FileNotFoundError:
            raise self._fail(
                f"known_hosts file {kh} does not exist",
                f"verify the host key out of band and add it: "
                f"ssh-keyscan -p {s.port} {h.address} >> {kh}",
            ) from None
        except OSError as e:
            raise self._fail(f"cannot read known_hosts {kh} ({e.strerror})",
                             readable_fix(kh, "known_hosts")) from None
        except paramiko.hostkeys.InvalidHostKey:
            raise self._fail(f"known_hosts {kh} has a line the SSH library cannot read",
                             "check it with `python -m pipeline.inventory check`") from None
        client.set_missing_host_key_policy(_StrictPolicy())
        t = s.connect_timeout_s
        try:
            client.connect(
                hostname=h.address,
                port=s.port,
                username=s.user,
                pkey=pkey,
                timeout=t,
                banner_timeout=t,
                auth_timeout=t,
                channel_timeout=t,
                allow_agent=False,
                look_for_keys=False,
            )
        except _UnknownHostKey as e:
            client.close()
            raise self._fail(
                f"host key for {e.hostname} ({_fingerprint(e.key)}) is not in {kh}",
                f"verify it out of band and add it with "
                f"`ssh-keyscan -p {s.port} {h.address} >> {kh}`",
            ) from None
        except paramiko.BadHostKeyException as e:
            client.close()
            # The lab's known_hosts is its own record (trusted when it made the keys): only
            # `lab reset` replaces it. A real host's new key is the user's to verify.
            fix = (
                "the embedded lab never trusts a changed key again: if you replaced the lab's "
                "host key yourself, `container-overhead lab reset` (python -m pipeline.lab "
                "reset) makes new keys and known_hosts; otherwise find out who did"
                if self._lab else
                f"verify the host's new key out of band (its console, its operator), then "
                f"`ssh-keygen -f {kh} -R '{e.hostname}'` and add the verified key to {kh}"
            )  # fmt: skip
            raise self._fail(
                f"host key MISMATCH: the server offered {_fingerprint(e.key)} but {kh} "
                f"has {_fingerprint(e.expected_key)} (reinstalled host, or an attack)",
                fix,
            ) from None
        except paramiko.AuthenticationException as e:
            client.close()
            raise self._fail(
                f"authentication failed for user {s.user} with key {s.key_file} ({e})",
                f"add {s.key_file}.pub to ~{s.user}/.ssh/authorized_keys on the host, "
                "or fix ssh.user / ssh.key_file",
            ) from None
        except TimeoutError as e:  # socket.timeout is an alias
            client.close()
            raise self._fail(
                f"connection timed out after {t:g} s ({e or 'no answer'})",
                "check the host is up, the address and port are right and no firewall drops "
                "SSH; raise ssh.connect_timeout_s for slow links",
            ) from None
        except paramiko.ssh_exception.NoValidConnectionsError as e:
            client.close()
            raise self._fail(
                f"connection refused on port {s.port} ({e.strerror})",
                "start sshd on the host or fix ssh.port / address",
            ) from None
        except paramiko.SSHException as e:
            client.close()
            raise self._fail(
                f"SSH handshake failed ({e})",
                "check that an SSH server (not another service) listens on that port",
            ) from None
        except OSError as e:
            client.close()
            raise self._fail(
                f"cannot connect ({e.strerror or e})",
                "check the address and the network route to the host",
            ) from None
        # Commands are many small request/reply exchanges on one connection: without
        # TCP_NODELAY each channel open waited ~40 ms (Nagle against delayed ACKs).
        sock = client.get_transport().sock
        if hasattr(sock, "setsockopt"):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return client

    @property
    def transport(self) -> paramiko.Transport:
        t = self._client.get_transport()
        if t is None:
            raise self._fail("the session is closed", "open a new Session")
        return t

    @property
    def alive(self) -> bool:
        t = self._client.get_transport()
        return t is not None and t.is_active()

    # -- commands -----------------------------------------------------------------------

    @staticmethod
    def render(command: str | Sequence[str], env: dict[str, str] | None = None) -> str:
        """The exact shell text sent for ``command`` (quoting lists, prefixing env)."""
        if isinstance(command, str):
            text = command
        else:
            args = [str(a) for a in command]
            if not args:
                raise ValueError("empty command")
            text = shlex.join(args)
        if env:
            for k in env:
                if not ENV_NAME_RE.fullmatch(k):
                    raise ValueError(f"invalid environment variable name {k!r}")
            exports = " ".join(f"{k}={shlex.quote(str(v))}" for k, v in env.items())
            text = f"export {exports}; {text}"
        return text

    def run(
        self,
        command: str | Sequence[str],
        *,
        timeout: float = 60,
        check: bool = True,
        stdin: bytes | None = None,
        env: dict[str, str] | None = None,
        root: str | None = None,
    ) -> Result:
        """Run ``command`` and return its output; ``timeout`` bounds the whole exchange.

        ``root`` names what the command needs root for (e.g. "change the qdisc"): it then
        runs as root, through sudo on a login that may use it, else :class:`NeedsRoot`."""
        text = self.render(command, env)
        sudo = self._sudo(root)
        run_id = secrets.token_hex(8)
        start = time.monotonic()
        deadline = start + timeout
        try:
            chan = self.transport.open_session(timeout=max(0.1, min(timeout, 30)))
            chan.settimeout(max(0.1, timeout))
            chan.exec_command(self._as(f"export {RUN_ID_VAR}={run_id}; {text}", sudo))
        except UnreachableHost:
            raise
        except (paramiko.SSHException, EOFError, OSError) as e:
            if not self.alive:
                raise self._lost(text) from e
            raise RemoteError(
                self.host.name, text, None, reason=f"could not be started ({e})"
            ) from e

        out: list[bytes] = []
        err: list[bytes] = []
        try:
            if stdin:
                self._send_stdin(chan, stdin, deadline, text)
            chan.shutdown_write()
            timed_out = self._pump(chan, out, err, deadline)
        except TimeoutError:
            timed_out = True
        except (paramiko.SSHException, EOFError, OSError) as e:
            chan.close()
            if not self.alive:
                raise self._lost(text) from e
            raise RemoteError(self.host.name, text, None, reason=f"failed ({e})") from e

        stdout = b"".join(out).decode("utf-8", errors="replace")
        stderr = b"".join(err).decode("utf-8", errors="replace")
        if timed_out:
            self._kill(chan, run_id, sudo)
            raise RemoteError(
                self.host.name, text, None, stderr, stdout=stdout,
                reason=f"timed out after {timeout:g} s",
            )
        status = chan.recv_exit_status()
        eof = chan.eof_received
        chan.close()
        if status == -1 and (not eof or not self.alive):
            # No exit status and no EOF: the channel was torn down because the connection
            # dropped (paramiko closes the channels just *before* marking the transport
            # inactive, so is_active() alone would race).
            raise self._lost(text)
        result = Result(
            host=self.host.name, command=text, status=status, stdout=stdout, stderr=stderr,
            seconds=time.monotonic() - start,
        )
        if check and status != 0:
            # -1: sshd sent an exit-signal instead of an exit status (paramiko keeps none).
            reason = "was killed by a signal (no exit status)" if status == -1 else None
            raise RemoteError(self.host.name, text, status, stderr, stdout=stdout, reason=reason)
        return result

    @property
    def is_root(self) -> bool:
        return self.host.ssh.user == "root"

    def _sudo(self, root: str | None) -> bool:
        """Whether a command needing ``root`` goes through sudo; NeedsRoot if it cannot run."""
        if not root or self.is_root:
            return False
        if self.host.ssh.sudo:
            return True
        raise NeedsRoot(self.host.name, self.host.ssh.user, root)

    @staticmethod
    def _as(text: str, sudo: bool) -> str:
        return f"sudo -n -- bash -c {shlex.quote(text)}" if sudo else text

    def _lost(self, command: str) -> UnreachableHost:
        return self._fail(
            "the SSH connection was lost (host down, rebooted, or sshd killed)",
            "check the host and retry; a Pool reconnects on the next use",
            command=command,
        )

    def _send_stdin(
        self, chan: paramiko.Channel, data: bytes, deadline: float, command: str
    ) -> None:
        # Sent in pieces with the deadline checked between them: a command that never reads
        # stdin would otherwise block sendall forever once the SSH window is full.
        view = memoryview(data)
        while view:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            chan.settimeout(min(remaining, 1.0))
            try:
                n = chan.send(view[:32768])
            except TimeoutError:
                continue
            if n == 0:
                break  # the channel was closed by the remote side
            view = view[n:]
        chan.settimeout(None)

    @staticmethod
    def _pump(
        chan: paramiko.Channel, out: list[bytes], err: list[bytes], deadline: float
    ) -> bool:
        """Drain stdout and stderr together until exit; return True on timeout.

        Both streams share one SSH window, so reading only one of them could stall the
        command once the other fills the window: always read whatever is ready.
        """
        fd = chan.fileno()  # a pipe paramiko sets when either stream has data or on close
        while True:
            got = False
            while chan.recv_ready():
                out.append(chan.recv(1 << 16))
                got = True
            while chan.recv_stderr_ready():
                err.append(chan.recv_stderr(1 << 16))
                got = True
            if (
                chan.exit_status_ready()
                and (chan.eof_received or chan.closed)
                and not chan.recv_ready()
                and not chan.recv_stderr_ready()
            ):
                # The exit status alone is not the end: sshd sends it as soon as the command
                # exits, possibly before output still held back by the SSH window. EOF says
                # all output has been sent.
                return False
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return True
            if not got:
                select.select([fd], [], [], min(remaining, 0.2))

    def _kill(self, chan: paramiko.Channel, run_id: str, sudo: bool = False) -> None:
        """Best effort: SIGKILL the timed-out command and every process it started."""
        try:
            # RFC 4254 6.9 "signal": sshd kills the session's top process (the shell).
            m = Message()
            m.add_byte(cMSG_CHANNEL_REQUEST)
            m.add_int(chan.remote_chanid)
            m.add_string("signal")
            m.add_boolean(False)
            m.add_string("KILL")
            chan.transport._send_user_message(m)
        except Exception:  # noqa: BLE001 - the close and the sweep below still run
            pass
        chan.close()
        # Children survive their shell, so also sweep by the marker in their environment.
        # The sweeping shell itself does not carry the marker (it is a separate channel).
        sweep = (
            f"grep -lzx {RUN_ID_VAR}={run_id} /proc/[0-9]*/environ 2>/dev/null"
            " | cut -d/ -f3 | xargs -r kill -KILL 2>/dev/null; true"
        )
        try:
            k = self.transport.open_session(timeout=KILL_TIMEOUT_S)
            k.settimeout(KILL_TIMEOUT_S)
            k.exec_command(self._as(sweep, sudo))
            k.shutdown_write()
            self._pump(k, [], [], time.monotonic() + KILL_TIMEOUT_S)
            k.close()
        except Exception:  # noqa: BLE001 - best effort; the timeout error is what matters
            pass

    # -- files --------------------------------------------------------------------------

    def _sftp_client(self) -> paramiko.SFTPClient:
        with self._lock:
            if self._sftp is None or self._sftp.get_channel().closed:
                try:
                    self._sftp = self._client.open_sftp()
                except (paramiko.SSHException, EOFError, OSError) as e:
                    if not self.alive:
                        raise self._lost("sftp") from e
                    raise RemoteError(
                        self.host.name, "sftp", None,
                        reason=f"could not start the sftp subsystem ({e}); enable "
                        "`Subsystem sftp` in the host's sshd_config",
                    ) from e
                self._sftp.get_channel().settimeout(max(self.host.ssh.connect_timeout_s, 60))
            return self._sftp

    def put(self, local: Path, remote: str) -> None:
        """Copy a local file to ``remote`` (a path on the host), via SFTP."""
        local = Path(local)
        what = f"put {local} -> {remote}"
        if not local.is_file():
            raise FileNotFoundError(f"{local} is not a file (put to {self.host.name}:{remote})")
        sftp = self._sftp_client()
        try:
            sftp.put(str(local), remote)
        except (OSError, paramiko.SSHException, EOFError) as e:
            if not self.alive:
                raise self._lost(what) from e
            raise RemoteError(self.host.name, what, None, reason=f"failed ({e})") from e

    def get(self, remote: str, local: Path) -> None:
        """Copy ``remote`` to ``local``; written to a temp file and renamed, so ``local``
        is either complete or absent (raw data must never be half-written)."""
        local = Path(local)
        what = f"get {remote} -> {local}"
        sftp = self._sftp_client()
        part = local.with_name(f".{local.name}.part-{os.getpid()}")
        try:
            sftp.get(remote, str(part))
            os.replace(part, local)
        except (OSError, paramiko.SSHException, EOFError) as e:
            part.unlink(missing_ok=True)
            if not self.alive:
                raise self._lost(what) from e
            raise RemoteError(self.host.name, what, None, reason=f"failed ({e})") from e

    # -- lifecycle ----------------------------------------------------------------------

    def close(self) -> None:
        with self._lock:
            if self._sftp is not None:
                try:
                    self._sftp.close()
                except Exception:  # noqa: BLE001 - closing a dead connection may fail
                    pass
                self._sftp = None
        self._client.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "open" if self.alive else "closed"
        return f"<Session {self.host.name} {self.host.ssh.user}@{self.host.address} {state}>"


class Pool:
    """Sessions to an inventory's hosts, opened on first use and closed together."""

    def __init__(self, inventory: Inventory):
        self.inventory = inventory
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    def __getitem__(self, host_name: str) -> Session:
        host = self.inventory.hosts.get(host_name)
        if host is None:
            raise KeyError(
                f"no host {host_name!r} in {self.inventory.source}; "
                f"known: {', '.join(sorted(self.inventory.hosts))}"
            )
        with self._lock:
            session = self._sessions.get(host_name)
            if session is not None and not session.alive:
                session.close()  # the connection died: reconnect rather than fail forever
                session = None
            if session is None:
                session = Session(
                    host, lab=self.inventory.lab, inventory=self.inventory.source
                )
                self._sessions[host_name] = session
            return session

    def __contains__(self, host_name: object) -> bool:
        return host_name in self._sessions

    def close(self) -> None:
        with self._lock:
            sessions, self._sessions = list(self._sessions.values()), {}
        for s in sessions:
            s.close()

    def __enter__(self) -> Pool:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
