"""pipeline.collect.remote against a real sshd on 127.0.0.1 (root; started and stopped per test)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from pathlib import Path

import pytest

from pipeline.collect.inventory import Inventory
from pipeline.collect.remote import Pool, RemoteError, Result, Session, UnreachableHost

# The fixture is registered by importing it (the lead owns the conftest.py files).
from tests.integration.conftest_remote import Sshd, free_port, keygen, sshd_fixture  # noqa: F401

pytestmark = pytest.mark.lab


def test_run_returns_stdout_stderr_status(sshd: Sshd) -> None:
    with Session(sshd.host()) as s:
        r = s.run("echo out; echo err >&2; hostname")
    assert isinstance(r, Result)
    assert r.host == "testhost"
    assert r.status == 0
    assert r.stdout.splitlines()[0] == "out"
    assert r.stdout.splitlines()[1] == os.uname().nodename
    assert r.stderr == "err\n"
    assert r.seconds > 0


def test_nonzero_exit_raises_with_host_command_and_stderr_tail(sshd: Sshd) -> None:
    cmd = "for i in $(seq 1 50); do echo line$i >&2; done; exit 3"
    with Session(sshd.host("node7")) as s:
        with pytest.raises(RemoteError) as ei:
            s.run(cmd)
        e = ei.value
        assert e.status == 3
        msg = str(e)
        assert "node7" in msg
        assert cmd in msg
        assert "status 3" in msg
        assert "line50" in msg and "line31" in msg  # the last 20 lines...
        assert "line30\n" not in msg  # ...and only those
        # check=False returns the status instead of raising
        assert s.run(cmd, check=False).status == 3


def test_list_command_is_quoted_no_injection(sshd: Sshd, tmp_path: Path) -> None:
    marker = tmp_path / "injected"
    nasty = f"a  b; touch {marker}"
    with Session(sshd.host()) as s:
        r = s.run(["printf", "%s\\n", nasty, "$(id -u)", "it's", ""])
    assert r.stdout == f"{nasty}\n$(id -u)\nit's\n\n"
    assert not marker.exists()
    # A string is shell text on purpose: the same characters *are* interpreted.
    with Session(sshd.host()) as s:
        assert s.run("echo $((6*7))").stdout == "42\n"


def test_env_and_stdin_are_passed(sshd: Sshd) -> None:
    data = bytes(range(256)) * 1000  # binary, 256 kB
    with Session(sshd.host()) as s:
        r = s.run("sha256sum", stdin=data)
        assert r.stdout.split()[0] == hashlib.sha256(data).hexdigest()
        r = s.run("printf '%s' \"$FOO\"", env={"FOO": "a b; $(x) 'q'"})
        assert r.stdout == "a b; $(x) 'q'"
        # no stdin: the command sees EOF at once instead of waiting for the timeout
        t0 = time.monotonic()
        assert s.run("cat", timeout=10).stdout == ""
        assert time.monotonic() - t0 < 5


def test_undecodable_output_is_replaced_not_fatal(sshd: Sshd) -> None:
    with Session(sshd.host()) as s:
        r = s.run("printf 'ok\\377\\n'")
    assert r.stdout == "ok\ufffd\n"


def test_timeout_raises_within_bound_and_session_survives(sshd: Sshd) -> None:
    with Session(sshd.host()) as s:
        t0 = time.monotonic()
        with pytest.raises(RemoteError) as ei:
            s.run("echo started; sleep 37.25", timeout=1)
        elapsed = time.monotonic() - t0
        assert 0.9 < elapsed < 4
        assert "timed out after 1 s" in str(ei.value)
        assert ei.value.stdout == "started\n"  # partial output is kept
        assert not isinstance(ei.value, UnreachableHost)
        # the connection is still usable after a timed-out command
        assert s.run("echo again").stdout == "again\n"
    # and the signal request killed the remote command
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if subprocess.run(["pgrep", "-f", "sleep 37.25"], capture_output=True).returncode:
            break
        time.sleep(0.1)
    else:
        pytest.fail("the timed-out command is still running")


def test_large_output_on_both_streams_does_not_deadlock(sshd: Sshd) -> None:
    n = 5_000_000
    # stderr first: a reader that waited on stdout only would stall on the shared window
    cmd = f"head -c {n} /dev/zero | tr '\\0' e >&2; head -c {n} /dev/zero | tr '\\0' o"
    with Session(sshd.host()) as s:
        r = s.run(cmd, timeout=60)
    assert len(r.stdout) == n and set(r.stdout) == {"o"}
    assert len(r.stderr) == n and set(r.stderr) == {"e"}


def test_put_get_round_trip(sshd: Sshd, tmp_path: Path) -> None:
    payload = os.urandom(3_000_000)
    src = tmp_path / "src.bin"
    src.write_bytes(payload)
    remote = str(tmp_path / "remote dir with space" / "copy.bin")
    back = tmp_path / "back.bin"
    with Session(sshd.host()) as s:
        s.run(["mkdir", "-p", str(Path(remote).parent)])
        s.put(src, remote)
        assert s.run(["sha256sum", remote]).stdout.split()[0] == hashlib.sha256(
            payload
        ).hexdigest()
        s.get(remote, back)
        with pytest.raises(RemoteError) as ei:
            s.get("/nonexistent/file", tmp_path / "missing.bin")
        assert "/nonexistent/file" in str(ei.value)
    assert back.read_bytes() == payload
    assert not (tmp_path / "missing.bin").exists()
    assert [p.name for p in tmp_path.iterdir() if ".part" in p.name] == []


def test_unknown_host_key_is_refused(sshd: Sshd) -> None:
    sshd.known_hosts.write_text("")
    with pytest.raises(UnreachableHost) as ei:
        Session(sshd.host("node2"))
    msg = str(ei.value)
    assert "node2" in msg and "127.0.0.1" in msg
    assert f"not in {sshd.known_hosts}" in msg
    assert "ssh-keyscan" in msg
    assert sshd.known_hosts.read_text() == ""  # never auto-added


def test_missing_known_hosts_file(sshd: Sshd) -> None:
    sshd.known_hosts.unlink()
    with pytest.raises(UnreachableHost, match="known_hosts file .* does not exist"):
        Session(sshd.host())
    assert not sshd.known_hosts.exists()


def test_wrong_host_key_is_refused(sshd: Sshd) -> None:
    other = keygen(sshd.dir / "impostor")
    sshd.known_hosts.write_text(sshd.known_hosts_line(other))
    with pytest.raises(UnreachableHost) as ei:
        Session(sshd.host("node3"))
    msg = str(ei.value)
    assert "node3" in msg
    assert "MISMATCH" in msg
    assert str(sshd.known_hosts) in msg


def test_unauthorized_client_key_is_refused(sshd: Sshd) -> None:
    keygen(sshd.dir / "stranger")
    with pytest.raises(UnreachableHost, match="authentication failed for user root"):
        Session(sshd.host(key_file=sshd.dir / "stranger"))


def test_closed_port_fails_fast(sshd: Sshd) -> None:
    port = free_port()
    t0 = time.monotonic()
    with pytest.raises(UnreachableHost) as ei:
        Session(sshd.host("ghost", port=port))
    assert time.monotonic() - t0 < 3
    msg = str(ei.value)
    assert f"ghost (127.0.0.1:{port})" in msg
    assert "refused" in msg


def test_lost_connection_raises_unreachable(sshd: Sshd) -> None:
    with Session(sshd.host("node9")) as s:
        # The shell's parent is this connection's sshd process: killing it drops the link.
        with pytest.raises(UnreachableHost, match="node9.*connection was lost"):
            s.run("kill -9 $PPID; sleep 3", timeout=20)
        assert not s.alive


def _inventory(sshd: Sshd) -> Inventory:
    a, b = sshd.host("a"), sshd.host("b")
    return Inventory(
        environment="test", lab=True, hosts={"a": a, "b": b}, servers=(a,), dc_client=b,
        internet_client=None, modes=None, source=sshd.dir / "inv.yaml",
    )


def test_pool_reuses_one_transport(sshd: Sshd) -> None:
    with Pool(_inventory(sshd)) as pool:
        assert "a" not in pool  # lazy: nothing opened yet
        s1 = pool["a"]
        first = s1.run("echo $SSH_CONNECTION").stdout
        s2 = pool["a"]
        second = s2.run("echo $SSH_CONNECTION").stdout
        assert s1 is s2 and s1.transport is s2.transport
        # same client port on the server side = the same TCP connection
        assert first == second and first.strip()
        assert pool["b"] is not s1
        with pytest.raises(KeyError, match="no host 'zz'"):
            pool["zz"]
    assert not s1.alive  # closed on exit


def test_pool_reconnects_after_connection_loss(sshd: Sshd) -> None:
    with Pool(_inventory(sshd)) as pool:
        s1 = pool["a"]
        with pytest.raises(UnreachableHost):
            s1.run("kill -9 $PPID; sleep 3", timeout=20)
        s2 = pool["a"]
        assert s2 is not s1
        assert s2.run("echo back").stdout == "back\n"


def test_lab_inventory_errors_point_at_lab_up(sshd: Sshd) -> None:
    sshd.known_hosts.write_text("")
    with Pool(_inventory(sshd)) as pool, pytest.raises(UnreachableHost) as ei:
        pool["a"]
    assert "python -m pipeline.lab up" in str(ei.value)


def test_command_killed_by_signal_is_an_error_not_unreachable(sshd: Sshd) -> None:
    with Session(sshd.host()) as s:
        with pytest.raises(RemoteError) as ei:
            s.run("kill -KILL $$")
        assert not isinstance(ei.value, UnreachableHost)
        assert "killed by a signal" in str(ei.value)
        assert s.alive


def test_background_process_with_redirected_output_returns_at_once(sshd: Sshd) -> None:
    with Session(sshd.host()) as s:
        t0 = time.monotonic()
        pid = s.run("sleep 30 >/dev/null 2>&1 </dev/null & echo $!", timeout=10).stdout.strip()
        assert time.monotonic() - t0 < 5
        assert s.run(["kill", pid]).status == 0
