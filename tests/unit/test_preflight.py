"""The preflight (pipeline/collect/preflight.py) without hosts: its probe run by this machine's
shell, the clock offset against a scripted clock, one finding per host and problem from fake
sessions; the embedded lab's trust on first use (pipeline/lab/sshd.py) on keys in a temporary
directory; what a lab inventory may not ask for; a stage that would write another
environment's data; the host-key MISMATCH fix for the lab and for real hosts."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import paramiko
import pytest
import yaml

from pipeline import environments, stages
from pipeline.collect import inventory, preflight, remote
from pipeline.collect.modes import MODES
from pipeline.collect.remote import Result
from pipeline.hosts import UnreachableHost
from pipeline.lab import logins, sshd, topology
from pipeline.lab.commands import LabError

ROOT = Path(__file__).resolve().parents[2]


def _inventory(tmp_path: Path, **changes) -> inventory.Inventory:
    data = yaml.safe_load((ROOT / "inventory" / "lab.yaml").read_text())
    data.update(changes)
    path = tmp_path / "inv.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return inventory.load(path, known_modes=MODES, check_files=False)


# ---- probe and clock --------------------------------------------------------------------


def test_the_probe_names_each_binary_as_this_shell_finds_it(tmp_path):
    tool = tmp_path / "tool"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    plain = tmp_path / "plain"
    plain.write_text("")  # present, not executable
    script = preflight.probe_script([str(tool), str(plain), str(tmp_path / "absent")])
    facts = preflight.parse(subprocess.run(["sh", "-c", script], capture_output=True,
                                           text=True, check=True).stdout)  # fmt: skip
    assert facts[f"bin {tool}"] == "ok"
    assert facts[f"bin {plain}"] == "missing"
    assert facts[f"bin {tmp_path / 'absent'}"] == "missing"
    assert facts["user"] == subprocess.run(["id", "-un"], capture_output=True,
                                           text=True).stdout.strip()  # fmt: skip
    assert facts["macvlan"] in ("yes", "no", "unknown")


class FakeSession:
    """Answers commands from a table: the first key the command text contains."""

    def __init__(self, name: str, answers: dict[str, tuple[int, str, str]]):
        self.name = name
        self.answers = answers
        self.sent: list[str] = []

    def run(self, command, *, timeout=60, check=True, **_) -> Result:
        text = remote.Session.render(command)
        self.sent.append(text)
        for needle, (status, out, err) in self.answers.items():
            if needle in text:
                if check and status:
                    raise remote.RemoteError(self.name, text, status, err)
                return Result(self.name, text, status, out, err, 0.0)
        return Result(self.name, text, 0, "", "", 0.0)


def test_the_clock_offset_is_the_remote_reading_against_the_middle_of_the_round_trip():
    readings = iter([100.0, 100.2])
    session = FakeSession("h", {"date": (0, "105.1\n", "")})
    offset, uncertainty = preflight.clock_offset(session, now=lambda: next(readings))
    assert offset == pytest.approx(5.0)
    assert uncertainty == pytest.approx(0.1)


def test_a_clock_apart_from_the_others_is_one_problem_on_that_host():
    reports = [preflight.HostReport(n, clock_offset_s=o, clock_uncertainty_s=0.001)
               for n, o in (("a", 0.000), ("b", 0.004), ("c", 0.350))]  # fmt: skip
    preflight.clock_problems(reports, tolerance_s=0.1)
    assert [len(r.problems) for r in reports] == [0, 0, 1]
    assert "clock +0.346 s" in str(reports[2].problems[0])
    assert "chrony" in reports[2].problems[0].fix


def test_a_clock_within_the_round_trip_is_not_a_problem():
    reports = [preflight.HostReport("a", clock_offset_s=0.0, clock_uncertainty_s=0.01),
               preflight.HostReport("b", clock_offset_s=0.15, clock_uncertainty_s=0.1)]
    preflight.clock_problems(reports, tolerance_s=0.1)
    assert not any(r.problems for r in reports)  # 0.075 from the median, less 0.1 uncertain


# ---- per host ---------------------------------------------------------------------------


class FakePool:
    def __init__(self, sessions: dict, refused: dict | None = None):
        self.sessions = sessions
        self.refused = refused or {}

    def __getitem__(self, name):
        if name in self.refused:
            raise self.refused[name]
        return self.sessions[name]


def _facts_ok(binaries: list[str]) -> str:
    return "user=co-ops\n" + "".join(f"bin {b}=ok\n" for b in binaries) + "macvlan=yes\n"


def test_an_unreachable_host_is_one_line_with_the_remote_modules_cause_and_fix(tmp_path):
    inv = _inventory(tmp_path)
    refused = UnreachableHost("node2", "10.77.0.12:22", "host key MISMATCH: ...", "lab reset")
    report = preflight.check_host(FakePool({}, {"node2": refused}), inv, inv.hosts["node2"],
                                  preflight.Plan(("throughput",), ("native",)))  # fmt: skip
    assert [str(p) for p in report.problems] == ["node2: host key MISMATCH: ...; fix: lab reset"]


def test_a_connection_lost_during_the_probe_is_a_problem_not_a_crash(tmp_path):
    inv = _inventory(tmp_path)
    lost = UnreachableHost("node1", "10.77.0.11:22", "the SSH connection was lost", "retry")

    class Dying(FakeSession):
        def run(self, command, **kwargs):
            if "date" in remote.Session.render(command):
                raise lost
            return super().run(command, **kwargs)

    session = Dying("node1", {})
    report = preflight.check_host(FakePool({"node1": session}), inv, inv.hosts["node1"],
                                  preflight.Plan())  # fmt: skip
    assert len(report.problems) == 1
    assert "a read-only probe failed" in str(report.problems[0])
    assert "the SSH connection was lost" in str(report.problems[0])


def test_a_missing_tool_and_a_missing_sudo_rule_are_one_line_each(tmp_path):
    inv = _inventory(tmp_path, ssh={"user": "co-ops", "port": 2222, "sudo": True,
                                    "key_file": "/k", "known_hosts": "/kh"})  # fmt: skip
    host = inv.hosts["node1"]
    session = FakeSession("node1", {
        "bin /usr/bin/iperf3": (0, "user=co-ops\nbin /usr/bin/iperf3=missing\n", ""),
        "sudo -n true": (1, "", "sudo: a password is required\n"),
        "date": (0, "0\n", ""),
    })  # fmt: skip
    report = preflight.check_host(FakePool({"node1": session}), inv, host,
                                  preflight.Plan(("throughput",), ("native",)))  # fmt: skip
    lines = [str(p) for p in report.problems]
    assert len(lines) == 2
    assert lines[0].startswith("node1: sudo -n true failed for co-ops (sudo: a password is "
                               "required)")  # fmt: skip
    assert "pipeline.lab up --inventory" in lines[0]  # a lab login: the lab makes the rule
    assert lines[1].startswith("node1: /usr/bin/iperf3 is missing or not executable: "
                               "throughput runs it")  # fmt: skip
    assert not any("iperf3 --version" in s for s in session.sent)  # no version of a missing tool


def test_a_tool_two_benchmarks_need_is_one_line_naming_both(tmp_path):
    inv = _inventory(tmp_path)
    session = FakeSession("node1", {
        "bin /usr/bin/iperf3": (0, "user=root\nbin /usr/bin/iperf3=missing\n", ""),
        "date": (0, "0\n", ""),
    })  # fmt: skip
    report = preflight.check_host(FakePool({"node1": session}), inv, inv.hosts["node1"],
                                  preflight.Plan(("throughput", "orchestration"), ("native",)))
    assert [str(p).split(";")[0] for p in report.problems] == [
        "node1: /usr/bin/iperf3 is missing or not executable: throughput, orchestration run it "
        "on the servers"]  # fmt: skip


def test_a_ready_host_reports_its_tool_version_and_no_problem(tmp_path):
    inv = _inventory(tmp_path)
    session = FakeSession("node1", {
        "bin /usr/bin/iperf3": (0, _facts_ok(["/usr/bin/iperf3"]), ""),
        "facts": (0, "kernel=6.1.0\ncgroup_version=2\ndocker_version=20.10.24\n", ""),
        "iperf3 --version": (0, "iperf 3.12 (cJSON 1.7.15)\nLinux node1\n", ""),
        "date": (0, "0\n", ""),
    })  # fmt: skip
    report = preflight.check_host(FakePool({"node1": session}), inv, inv.hosts["node1"],
                                  preflight.Plan(("throughput",), ("native", "macvlan")))
    assert report.problems == [] and report.notes == []
    assert report.facts["tool throughput"] == "iperf 3.12 (cJSON 1.7.15)"
    line = preflight.summary(report)
    assert "kernel 6.1.0" in line and "cgroup v2" in line and "docker 20.10.24" in line
    assert not any("sudo" in s for s in session.sent)  # root logs in: no sudo rule to check


def test_a_planned_mode_the_kernel_cannot_run_is_a_note_not_a_problem(tmp_path):
    inv = _inventory(tmp_path)
    facts = {"macvlan": "no", "max_user_namespaces": "0", "docker_version": "n/a"}
    notes = preflight.kernel_notes(inv.hosts["node1"], facts, ["macvlan", "rootless-docker"])
    text = "\n".join(map(str, notes))
    assert "mode macvlan will be skipped" in text
    assert "user namespaces are off (user.max_user_namespaces=0" in text
    assert "docker modes will be skipped" in text
    assert preflight.kernel_notes(inv.hosts["node1"], facts, ["native"]) == []
    # modes that run Docker's containers without driving its engine in a scenario need it too
    for mode in ("docker-host", "docker-nat", "docker-proxy", "swarm-ingress"):
        notes = preflight.kernel_notes(inv.hosts["node1"], {"docker_version": "n/a"}, [mode])
        assert ["docker modes will be skipped" in str(n) for n in notes] == [True], mode


def test_the_plan_is_the_campaigns_selection_of_modes(tmp_path):
    # as campaign.collect's candidates: the inventory's modes, then the benchmark's own
    inv = _inventory(tmp_path, modes=["native", "docker-host", "docker-overlay2"])
    assert preflight.plan(inv, ["throughput"]).modes == ("native", "docker-host",
                                                          "docker-overlay2")  # fmt: skip
    assert preflight.plan(inv, ["disk"]).modes == ("native", "docker-overlay2")


def test_the_uploaded_tool_is_not_required_on_the_host():
    assert preflight.required_binaries("latency") == []  # sockperf: built and uploaded
    assert preflight.required_binaries("throughput") == ["/usr/bin/iperf3"]


def test_the_error_lists_every_problem_and_says_nothing_started():
    report = preflight.Report([
        preflight.HostReport("a", problems=[preflight.Finding("a", "x", "fix x")]),
        preflight.HostReport("b", problems=[preflight.Finding("b", "y", "fix y")]),
    ])  # fmt: skip
    text = str(preflight.PreflightError("inv.yaml", report))
    assert text.splitlines() == [
        "preflight of inv.yaml: 2 problems; no campaign started",
        "PROBLEM a: x; fix: fix x", "PROBLEM b: y; fix: fix y",
    ]  # fmt: skip


# ---- a collection stage runs it first ---------------------------------------------------


def test_a_stage_on_real_hosts_stops_at_the_preflight_before_its_campaign(tmp_path, monkeypatch):
    inv_file = tmp_path / "hosts.yaml"
    data = yaml.safe_load((ROOT / "inventory" / "example-hosts.yaml").read_text())
    inv_file.write_text(yaml.safe_dump(data))
    asked = []

    def refuse(file, benchmarks, modes, log):
        asked.append((benchmarks, modes))
        raise preflight.PreflightError(file, preflight.Report([]))

    monkeypatch.setattr(preflight, "require", refuse)
    monkeypatch.setattr(environments.campaign, "collect",
                        lambda *a, **k: pytest.fail("the campaign started"))  # fmt: skip
    with pytest.raises(preflight.PreflightError):
        environments.collect("throughput", inv_file, tmp_path / "raw", None, 1, ["native"])
    assert asked == [(("throughput",), ["native"])]
    assert not (tmp_path / "raw").exists()


def test_the_instrument_and_calibration_stages_get_their_provider_after_the_preflight(
        tmp_path, monkeypatch):  # fmt: skip
    """Their notebooks take the provider from ``environments.prepared``: on real hosts the
    preflight runs first, for what the stage plans; on the lab the provider carries the plan
    to its own preflight once the lab is up."""
    import json

    inv_file = tmp_path / "hosts.yaml"
    inv_file.write_text((ROOT / "inventory" / "example-hosts.yaml").read_text())
    asked = []
    monkeypatch.setattr(preflight, "require", lambda f, b, m, log: asked.append((b, m)))
    assert environments.prepared(inv_file, ["throughput", "cpu"], ["native", "native-aa"]) is None
    assert asked == [(("throughput", "cpu"), ["native", "native-aa"])]
    lab = environments.prepared(ROOT / "inventory" / "lab.yaml", ["latency"], ["native"])
    assert (lab.benchmarks, lab.modes) == (("latency",), ["native"]) and len(asked) == 1
    for notebook in ("42-check-instrument", "13-calibrate-wan"):
        cells = json.loads((ROOT / "notebooks" / "collect" / f"{notebook}.ipynb").read_text())
        code = "".join("".join(c["source"]) for c in cells["cells"])
        assert "provider=prepared(inventory_file" in code and "import provider" not in code


# ---- what the embedded lab cannot be ----------------------------------------------------


def test_a_fourth_server_is_refused_naming_it(tmp_path):
    data = yaml.safe_load((ROOT / "inventory" / "lab.yaml").read_text())
    data["hosts"]["node4"] = {"address": "10.77.0.14"}
    data["roles"]["servers"].append("node4")
    path = tmp_path / "four.yaml"
    path.write_text(yaml.safe_dump(data))
    lab = environments.provider(path)
    problems = lab.unsupported()
    assert len(problems) == 1
    assert "hosts.node4: the embedded lab has no host node4 at 10.77.0.14" in problems[0]
    with pytest.raises(inventory.InventoryError, match="no host node4"):
        lab.login()


def test_a_login_per_host_is_refused_naming_the_host_and_what_differs(tmp_path):
    data = yaml.safe_load((ROOT / "inventory" / "lab.yaml").read_text())
    data["hosts"]["node2"]["ssh"] = {"user": "co-other", "port": 2200}
    path = tmp_path / "per-host.yaml"
    path.write_text(yaml.safe_dump(data))
    problems = environments.provider(path).unsupported()
    assert len(problems) == 1
    assert "hosts.node2.ssh: logs in with another user, port than node1" in problems[0]


def test_the_lab_inventories_are_supported():
    for name in ("lab.yaml", "lab-operator.yaml"):
        assert environments.provider(ROOT / "inventory" / name).unsupported() == []


# ---- a stage owns its output ------------------------------------------------------------


def test_an_environment_whose_inventory_names_another_is_refused(tmp_path, monkeypatch):
    from pipeline import params as params_mod

    params = params_mod.load()
    bare = tmp_path / "bare.yaml"
    bare.write_text((ROOT / "inventory" / "lab.yaml").read_text())  # says `environment: lab`
    other = params_mod.Params(raw={**params.raw, "environments": {
        **params.raw["environments"], "bare": str(bare)}}, profile=params.profile)  # fmt: skip
    stage = next(s for s in stages.all_stages(other) if s.name == "collect-throughput")
    problem = stages.owner_problem(stage, other, "bare")
    assert "environment 'bare' names" in problem
    assert "`environment: lab` would write into environment 'lab'" in problem
    assert stages.owner_problem(stage, other, "lab") is None


# ---- trust on first use in the lab ------------------------------------------------------


@pytest.fixture
def lab_keys(tmp_path, monkeypatch):
    """The lab's key paths under tmp_path, its logins reduced to root's known_hosts file."""
    monkeypatch.setattr(topology, "STATE_DIR", tmp_path)
    known = tmp_path / "ssh" / "known_hosts"
    monkeypatch.setattr(sshd, "KNOWN_HOSTS", known)
    monkeypatch.setattr(sshd, "SSH_DIR", tmp_path / "ssh")
    monkeypatch.setattr(sshd, "HOSTS_FILE", tmp_path / "hosts")

    def ensure(line) -> None:  # root's login only: its known_hosts is the record
        known.write_text("".join(f"{h.address} {line(h)}\n" for h in topology.SSH_HOSTS))

    monkeypatch.setattr(logins, "ensure", ensure)
    return known


def test_keys_are_trusted_when_made_and_a_changed_key_is_refused(lab_keys):
    sshd.ensure_keys()
    assert "# the lab's hosts" in sshd.HOSTS_FILE.read_text()  # what every sshd's /etc/hosts is
    first = lab_keys.read_text()
    assert len(first.splitlines()) == len(topology.SSH_HOSTS)
    sshd.ensure_keys()  # nothing changed: nothing refused, nothing rewritten differently
    assert lab_keys.read_text() == first

    node2 = topology.NODES[1]
    trusted = sshd.trusted()[node2.address]
    for path in (sshd.host_key(node2), sshd.host_key(node2).with_suffix(".pub")):
        path.unlink()
    sshd.generate_key(sshd.host_key(node2), "impostor")  # the key swapped on disk
    with pytest.raises(sshd.HostKeyChanged) as ei:
        sshd.ensure_keys()
    msg = str(ei.value)
    assert f"host key of lab host node2 ({node2.address}) changed" in msg
    assert sshd.fingerprint(trusted) in msg
    assert sshd.fingerprint(sshd.host_key_line(node2)) in msg
    assert "container-overhead lab reset" in msg
    assert lab_keys.read_text() == first  # the record is not touched

    sshd.reset_keys()
    assert sshd.trusted()[node2.address] == sshd.host_key_line(node2)
    assert sshd.trusted()[topology.NODES[0].address] != first.splitlines()[0].split(" ", 1)[1]


def test_a_lost_record_does_not_make_the_keys_on_disk_trusted(lab_keys):
    """Deleting (or cutting) the record while the keys stay is not a first use: the lab
    refuses until `lab reset`, and writes no record of its own."""
    sshd.ensure_keys()
    first = lab_keys.read_text()
    node3 = topology.NODES[2]
    lab_keys.write_text("".join(line + "\n" for line in first.splitlines()
                                if not line.startswith(f"{node3.address} ")))  # fmt: skip
    with pytest.raises(sshd.HostKeyChanged) as ei:
        sshd.ensure_keys()
    assert f"holds no key for lab host(s) node3 ({node3.address})" in str(ei.value)
    assert "container-overhead lab reset" in str(ei.value)
    lab_keys.unlink()
    with pytest.raises(sshd.HostKeyChanged, match="made earlier"):
        sshd.ensure_keys()
    assert not lab_keys.exists()
    sshd.reset_keys()
    assert len(sshd.trusted()) == len(topology.SSH_HOSTS)


def test_the_fingerprint_is_ssh_keygens(lab_keys, tmp_path):
    sshd.generate_key(tmp_path / "k", "x")
    shown = subprocess.run(["ssh-keygen", "-l", "-E", "sha256", "-f", tmp_path / "k.pub"],
                           capture_output=True, text=True, check=True).stdout.split()[1]
    assert sshd.fingerprint((tmp_path / "k.pub").read_text()).split()[1] == shown


def test_a_login_on_another_port_may_not_write_roots_record():
    login = replace(logins.ROOT, user="co-x", port=2222)
    with pytest.raises(LabError, match="names a file of its own"):
        login.check()


# ---- the MISMATCH message ---------------------------------------------------------------


@pytest.mark.parametrize("lab", [True, False])
def test_the_mismatch_fix_differs_for_the_lab_and_real_hosts(tmp_path, monkeypatch, lab):
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", tmp_path / "id"],
                   check=True)  # fmt: skip
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", tmp_path / "other"],
                   check=True)  # fmt: skip
    known = tmp_path / "known_hosts"
    known.write_text("10.0.0.1 " + (tmp_path / "id.pub").read_text())
    offered = paramiko.PKey.from_path(tmp_path / "other")
    expected = paramiko.PKey.from_path(tmp_path / "id")

    def connect(self, **_):
        raise paramiko.BadHostKeyException("10.0.0.1", offered, expected)

    monkeypatch.setattr(paramiko.SSHClient, "connect", connect)
    ssh = inventory.SshSettings("root", 22, tmp_path / "id", known, 5.0)
    with pytest.raises(UnreachableHost) as ei:
        remote.Session(inventory.Host("h", "10.0.0.1", ssh), lab=lab)
    msg = str(ei.value)
    assert "MISMATCH" in msg and offered.fingerprint in msg and expected.fingerprint in msg
    if lab:
        assert "container-overhead lab reset" in msg and "pipeline.lab up" not in msg
    else:
        assert "verify the host's new key out of band" in msg and "lab reset" not in msg


def test_check_connect_refuses_a_lab_shape_without_connecting(tmp_path, capsys, monkeypatch):
    from pipeline import cli

    data = yaml.safe_load((ROOT / "inventory" / "lab.yaml").read_text())
    data["hosts"]["node4"] = {"address": "10.77.0.14"}
    data["roles"]["servers"].append("node4")
    path = tmp_path / "four.yaml"
    path.write_text(yaml.safe_dump(data))
    monkeypatch.setattr(preflight, "main", lambda *a: pytest.fail("it connected"))
    assert cli.main(["check", "--connect", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"PROBLEM {path}: hosts.node4: the embedded lab has no host node4" in err
