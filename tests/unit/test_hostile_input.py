"""Hostile or careless input, without the lab: a corpus of bad inventories, bad params, bad host
state and garbled tool output, each refused with a message that names the problem and its fix,
no traceback, no secret echoed, nothing written under data/raw; and every remote command
builder that takes an inventory value or a parameter, fed shell metacharacters."""

from __future__ import annotations

import hashlib
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline import params
from pipeline.benchmarks import BENCHMARKS, ToolOutputError, Window
from pipeline.collect import hostfacts, images
from pipeline.collect import inventory as inventory_mod
from pipeline.collect.inventory import Host, SshSettings
from pipeline.collect.modes.base import RootlessUser, rootless_probe
from pipeline.collect.remote import Session, UnreachableHost

ROOT = Path(__file__).resolve().parents[2]
PEM = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "QyNTUxOQAAACDq9Zp3nWxQe7PmsRUZk8cG5uT2oQzYy4h1vK0dJ3aF0gAAAJh5X1q0eV9a\n"
    "-----END OPENSSH PRIVATE KEY-----\n"
)
PUBLIC = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOr1mnedbFB7s+axFRmTxwbm5PahDNjLiHW8rR0ndoXS bob@x"
BLOB = "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6QUJD"
METACHARS = ["; rm -rf x", "$(id)", "`id`", "a'b\"c", "line1\nline2", "two words", "*", "-n"]


def windows(secret: str, n: int = 8) -> set[str]:
    """Every n-character piece of ``secret`` that is not pure layout or PEM armour."""
    body = "".join(secret.split("-----")[2:3]) if "-----" in secret else secret
    return {body[i:i + n] for i in range(len(body) - n + 1) if body[i:i + n].strip()}


def assert_not_echoed(secret: str, message: str) -> None:
    leaked = [w for w in windows(secret) if w in message]
    assert not leaked, f"the message echoes part of the secret: {leaked[:3]}"


@pytest.fixture
def raw_dir(tmp_path, monkeypatch) -> Callable[[], None]:
    """A data/raw in a scratch working directory; the returned check asserts it is unchanged."""
    work = tmp_path / "work"
    raw = work / "data" / "raw" / "throughput"
    raw.mkdir(parents=True)
    (raw / "runs.csv").write_text("run,sample,value\n1,1,9.4\n")
    monkeypatch.chdir(work)

    def digest() -> dict[str, str]:
        return {str(p.relative_to(work)): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted((work / "data").rglob("*")) if p.is_file()}  # fmt: skip

    before = digest()
    return lambda: assert_equal(before, digest())


def assert_equal(a: Any, b: Any) -> None:
    assert a == b, "data/raw changed"


# -- inventories ---------------------------------------------------------------------------


@pytest.fixture
def keys(tmp_path) -> dict[str, Path]:
    d = tmp_path / "keys"
    d.mkdir()
    out = {}
    for name, extra in (("plain", []), ("enc", []), ("enc_pem", ["-t", "rsa", "-b", "1024",
                                                                 "-m", "PEM"]),
                        ("enc_pkcs8", ["-t", "rsa", "-b", "1024", "-m", "PKCS8"])):  # fmt: skip
        pw = "" if name == "plain" else "secret"
        kind = [] if extra else ["-t", "ed25519"]
        subprocess.run(["ssh-keygen", "-q", *kind, *extra, "-N", pw, "-C", "", "-f",
                        str(d / name)], check=True)  # fmt: skip
        out[name] = d / name
    kh = d / "known_hosts"
    kh.write_text("")
    out["known_hosts"] = kh
    return out


def good_inventory(keys: dict[str, Path]) -> dict[str, Any]:
    return {
        "environment": "bare-metal",
        "ssh": {"user": "bench", "port": 22, "key_file": str(keys["plain"]),
                "known_hosts": str(keys["known_hosts"]), "connect_timeout_s": 5},
        "hosts": {
            "srv1": {"address": "192.0.2.10", "rootless": {"user": "bench"},
                     "macvlan": {"parent": "eno1", "subnet": "192.0.2.0/24",
                                 "gateway": "192.0.2.1", "ip_range": "192.0.2.224/28"}},
            "srv2": {"address": "192.0.2.11"},
            "client1": {"address": "192.0.2.20"},
        },
        "roles": {"servers": ["srv1", "srv2"], "dc_client": "client1"},
    }  # fmt: skip


def _set(path: str, value: Any) -> Callable[[dict], None]:
    def change(doc: dict) -> None:
        *parents, last = path.split(".")
        for p in parents:
            doc = doc[p]
        doc[last] = value

    return change


BILLION_LAUGHS = "\n".join(
    ['environment: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [f"l{i}: &{chr(98 + i)} [{','.join([f'*{chr(97 + i)}'] * 9)}]" for i in range(8)]
)

# (id, the inventory: YAML text or a change to a valid one, needles the message must hold,
#  a secret that must not appear)
INVENTORY_CASES: list[tuple[str, Any, tuple[str, ...], str | None]] = [
    ("recursive-alias", "environment: &a [*a]\n", ("aliases (*name) are not allowed",), None),
    ("billion-laughs", BILLION_LAUGHS, ("aliases (*name) are not allowed", "line 2"), None),
    ("merge-key", "base: &b {user: x}\nssh:\n  <<: *b\n", ("aliases (*name) are not allowed",),
     None),
    ("deep-nesting", "hosts: " + "[" * 20000 + "]" * 20000 + "\n",
     ("nested too deeply", "flatten it"), None),
    ("oversized", "# " + "x" * (1 << 20) + "\n", ("bytes, not an inventory",), None),
    ("not-utf8", b"environment: caf\xe9\n", ("not UTF-8", "save it as UTF-8"), None),
    ("empty", "", ("the file is empty", "example-hosts.yaml"), None),
    ("top-level-list", "- a\n- b\n", ("not a mapping",), None),
    ("bad-syntax", "ssh: [unclosed\n", ("not valid YAML at line", "fix the syntax"), None),
    ("duplicate-host", "hosts:\n  a: {address: 10.0.0.1}\n  a: {address: 10.0.0.2}\n",
     ("given twice", "remove or rename one"), None),
    ("pem-in-user", _set("ssh.user", PEM), ("ssh.user: looks like key material",
                                            "not shown", "ssh.key_file"), PEM),
    ("pem-in-key-file", _set("ssh.key_file", PEM), ("ssh.key_file: looks like key material, "
                                                    "not a path",), PEM),  # fmt: skip
    ("public-key-in-address", _set("hosts.srv2.address", PUBLIC),
     ("hosts.srv2.address: looks like key material (an OpenSSH public key line)",), PUBLIC),
    ("blob-in-environment", _set("environment", BLOB),
     ("environment: looks like key material (a long base64 blob",), BLOB),
    ("pem-as-host-name", lambda d: d["hosts"].update({PEM: {"address": "192.0.2.30"}}),
     ("looks like key material (a private key",), PEM),
    ("pem-in-unknown-key", _set("ssh.private_key", PEM),
     ("unknown key 'private_key'", "ssh.private_key: looks like key material"), PEM),
    ("pem-in-role", _set("roles.dc_client", PEM), ("roles.dc_client: looks like key",), PEM),
    ("user-semicolon", _set("ssh.user", "root; rm -rf x"), ("is not a valid user name",), None),
    ("user-substitution", _set("ssh.user", "$(id)"), ("is not a valid user name",), None),
    ("address-backticks", _set("hosts.srv2.address", "`id`"),
     ("neither an IP address nor a valid DNS name", "give an IPv4/IPv6 address"), None),
    ("address-newline", _set("hosts.srv2.address", "10.0.0.1\nid"),
     ("give an IPv4/IPv6 address",), None),
    ("address-bad-ip", _set("hosts.srv2.address", "10.0.0.300"), ("not a valid IP address",),
     None),
    ("environment-semicolon", _set("environment", "lab; touch x"),
     ("must match [a-z0-9][a-z0-9-]*", "e.g. `environment: lab-touch-x`"), None),
    ("macvlan-parent-and", _set("hosts.srv1.macvlan.parent", "eth0 && id"),
     ("is not a network interface name",), None),
    ("rootless-root", _set("hosts.srv1.rootless.user", "root"),
     ("must not be root", "unprivileged user"), None),
    ("rootless-quote", _set("hosts.srv1.rootless.user", "a'b"), ("is not a user name",), None),
    ("port-zero", _set("ssh.port", 0), ("out of range", "1..65535"), None),
    ("port-text", _set("ssh.port", "22; id"), ("out of range", "1..65535"), None),
    ("timeout-negative", _set("ssh.connect_timeout_s", -1), ("is not a timeout",), None),
    ("timeout-text", _set("ssh.connect_timeout_s", "10"), ("is not a timeout",), None),
    ("host-name-space", lambda d: d["hosts"].update({"a b": {"address": "192.0.2.31"}}),
     ("is not usable", "e.g. node1"), None),
    ("role-substitution", _set("roles.servers", ["srv1", "$(id)"]),
     ("names unknown host '$(id)'", "define it under `hosts`"), None),
    ("mode-semicolon", _set("modes", ["native; id"]), ("unknown mode",), None),
    ("lab-text", _set("lab", "yes please"), ("must be true or false",), None),
    ("key-missing", _set("ssh.key_file", "/nonexistent/id_ed25519"),
     ("does not exist", "ssh-keygen -t ed25519"), None),
]


def _write_inventory(tmp_path: Path, keys: dict[str, Path], case: Any) -> Path:
    path = tmp_path / "inv.yaml"
    if isinstance(case, bytes):
        path.write_bytes(case)
    elif isinstance(case, str):
        path.write_text(case)
    else:
        doc = good_inventory(keys)
        case(doc)
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.mark.parametrize(("case", "needles", "secret"),
                         [c[1:] for c in INVENTORY_CASES], ids=[c[0] for c in INVENTORY_CASES])
def test_bad_inventory_is_refused_clearly(
    case, needles, secret, tmp_path, keys, raw_dir, capsys
) -> None:  # fmt: skip
    path = _write_inventory(tmp_path, keys, case)
    assert inventory_mod.main(["check", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err
    assert err.startswith(f"invalid inventory {path}:")
    for needle in needles:
        assert needle in err, (needle, err)
    if secret is not None:
        assert_not_echoed(secret, err)
    raw_dir()


def test_the_good_inventory_of_the_corpus_is_valid(tmp_path, keys, capsys) -> None:
    path = _write_inventory(tmp_path, keys, lambda d: None)
    assert inventory_mod.main(["check", str(path)]) == 0
    assert "valid (bare-metal: 3 hosts with roles)" in capsys.readouterr().out


@pytest.mark.parametrize("key", ["enc", "enc_pem", "enc_pkcs8"])
def test_an_encrypted_key_is_named_with_the_fix(key, tmp_path, keys, raw_dir, capsys) -> None:
    path = _write_inventory(tmp_path, keys, _set("ssh.key_file", str(keys[key])))
    assert inventory_mod.main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: ssh.key_file: private key {keys[key]} is encrypted" in err
    assert "-N ''" in err and "does not use an agent" in err
    assert "secret" not in err
    raw_dir()


def test_an_unencrypted_key_is_not_called_encrypted(keys) -> None:
    assert inventory_mod.key_encryption(keys["plain"]) is None
    assert inventory_mod.key_encryption(keys["enc"]) == "a passphrase, cipher aes256-ctr"


def test_an_encrypted_key_fails_before_connecting_naming_host_key_and_inventory(keys) -> None:
    ssh = SshSettings(user="bench", port=1, key_file=keys["enc"],
                      known_hosts=keys["known_hosts"], connect_timeout_s=1)  # fmt: skip
    with pytest.raises(UnreachableHost) as caught:
        Session(Host(name="srv1", address="192.0.2.10", ssh=ssh),
                inventory=Path("inventory/mine.yaml"))  # fmt: skip
    msg = str(caught.value)
    assert msg.startswith("cannot reach host srv1 (192.0.2.10:1): private key")
    assert f"{keys['enc']} is encrypted" in msg and "inventory/mine.yaml" in msg
    assert "TypeError" not in msg and "-N ''" in msg


def test_the_inventory_check_command_has_no_traceback(tmp_path) -> None:
    bad = tmp_path / "inv.yaml"
    bad.write_text("environment: &a [*a]\nssh: {user: '$(id)'}\n")
    done = subprocess.run([sys.executable, "-m", "pipeline.collect.inventory", "check", str(bad)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{bad}: not valid YAML at line 1" in done.stderr
    done = subprocess.run([sys.executable, "-m", "pipeline.collect.inventory"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 2 and done.stderr.startswith("usage:")


@pytest.mark.parametrize("name", ["lab.yaml", "example-hosts.yaml"])
def test_the_shipped_inventories_hold_nothing_that_looks_like_a_secret(name) -> None:
    inv = inventory_mod.load(ROOT / "inventory" / name, _modes(), check_files=False)
    assert inv.hosts


def _modes() -> list[str]:
    from pipeline.collect.modes import MODES

    return list(MODES)


# -- params ----------------------------------------------------------------------------------


@pytest.fixture
def repo(settings_repo) -> Path:
    return settings_repo


def _params_edit(file: str, change: Callable[[dict], None]) -> Callable[[Path], None]:
    def apply(repo: Path) -> None:
        path = repo / file
        doc = yaml.safe_load(path.read_text())
        change(doc)
        path.write_text(yaml.safe_dump(doc, sort_keys=False))

    return apply


def _params_text(file: str, text: str) -> Callable[[Path], None]:
    return lambda repo: (repo / file).write_text(text)


DEMO = "conf/profiles/demo.yaml"
PARAMS_CASES: list[tuple[str, Callable[[Path], None], tuple[str, ...], str | None]] = [
    ("runs-zero", _params_edit(DEMO, _set("runs", 0)),
     ("demo.yaml.runs: must be a whole number in [1, 1000], got 0",), None),
    ("runs-negative", _params_edit(DEMO, _set("throughput.runs", -3)),
     ("throughput.runs: must be a whole number in [1, 1000], got -3",), None),
    ("window-negative", _params_edit(DEMO, _set("throughput.seconds", -1)),
     ("throughput.seconds: must be a number in (0, 86400], got -1",), None),
    ("margin-text", _params_edit("params.yaml", _set("common.margins.cpu", "two")),
     ("common.margins.cpu: must be a number in (0, 1), got 'two'",), None),
    ("confidence-nan", _params_edit("params.yaml", _set("analysis.confidence", float("nan"))),
     ("analysis.confidence: must be a number in [0.5, 1)",), None),
    ("profile-semicolon", _params_edit("params.yaml", _set("profile", "demo; rm -rf x")),
     ("profile: must be a profile name",), None),
    ("environment-escape", _params_edit("params.yaml", _set("environments.lab", "../../etc/x")),
     ("environments.lab: must be a relative path inside the repository",), None),
    ("environment-path-too-long", _params_edit("params.yaml", _set("environments.lab", "x" * 300)),
     ("environments.lab: must be a relative path inside the repository",), None),
    ("compile-option", _params_edit(DEMO, _set("cpu.compile_packages", "-toolexec=id errors")),
     ("cpu.compile_packages: must be Go package patterns", "none starting with '-'"), None),
    ("compile-substitution", _params_edit(DEMO, _set("instrument.compile_packages", "$(id)")),
     ("instrument.compile_packages: must be Go package patterns",), None),
    ("instrument-variants-elsewhere", _params_edit(DEMO, _set("instrument.variants",
                                                             {"cpu": "1thread"})),
     ("instrument.variants: 'cpu' is not one of the check's benchmarks (throughput)",), None),
    ("instrument-variants-unknown", _params_edit(DEMO, _set("instrument.variants",
                                                            {"throughput": "sctp"})),
     ("instrument.variants.throughput: must be comma-separated variants of throughput",), None),
    ("params-recursive-alias", _params_text("params.yaml", "profile: &a [*a]\n"),
     ("aliases (*name) are not allowed",), None),
    ("params-billion-laughs", _params_text("params.yaml", BILLION_LAUGHS),
     ("aliases (*name) are not allowed",), None),
    ("profile-alias", _params_text(DEMO, "runs: &r 3\nreps: *r\n"),
     ("conf/profiles/demo.yaml: not valid YAML", "aliases (*name) are not allowed"), None),
    ("params-pem", _params_edit("params.yaml", _set("common.seed", PEM)),
     ("common.seed: looks like a private key", "the value is not shown"), PEM),
    ("profile-public-key", _params_edit(DEMO, _set("leaves_out", [PUBLIC])),
     ("leaves_out[0]: looks like an OpenSSH public key line",), PUBLIC),
    ("params-deep", _params_text("params.yaml", "a: " + "[" * 20000 + "]" * 20000),
     ("nested too deeply",), None),
    ("params-not-utf8", lambda repo: (repo / "params.yaml").write_bytes(b"profile: d\xe9mo\n"),
     ("not UTF-8",), None),
]


@pytest.mark.parametrize(("break_it", "needles", "secret"), [c[1:] for c in PARAMS_CASES],
                         ids=[c[0] for c in PARAMS_CASES])  # fmt: skip
def test_bad_params_are_refused_clearly(
    break_it, needles, secret, repo, raw_dir, monkeypatch, capsys
) -> None:  # fmt: skip
    break_it(repo)
    monkeypatch.setattr(params, "ROOT", repo)
    assert params.main([]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err and "problem(s):" in err
    for needle in needles:
        assert needle in err, (needle, err)
    if secret is not None:
        assert_not_echoed(secret, err)
    raw_dir()


# -- host state and tool output ------------------------------------------------------------

W = Window(seconds=2.0, count=100)
TOOL_CASES: list[tuple[str, str, str, str]] = [
    ("iperf3-empty-object", "throughput", "tcp", "{}"),
    ("iperf3-not-json", "throughput", "udp", "iperf3: error - unable to connect\n"),
    ("iperf3-json-list", "throughput", "tcp", "[]"),
    ("iperf3-json-null", "throughput", "udp", "null"),
    ("iperf3-bad-intervals", "throughput", "tcp", '{"intervals": [1], "end": {}}'),
    ("fio-json-list", "disk", next(iter(BENCHMARKS["disk"].variants)), "[]"),
    ("fio-json-null", "disk", next(iter(BENCHMARKS["disk"].variants)), "null"),
    ("loadgen-json-list", "http", "1k", "[]"),
    ("loadgen-json-null", "http", "1k", "null"),
    ("sockperf-garbage", "latency", "udp", "sockperf: ====> avg-lat= x\n"),
    ("sockperf-empty", "latency", "tcp", ""),
    ("sysbench-garbage", "cpu", "1thread", "events per second: x\n"),
    ("compile-garbage", "cpu", "compile", "compile_ns x\n"),
    ("sysbench-memory-binary", "memory", "write", "\x00\x01garbage"),
    ("fio-no-jobs", "disk", next(iter(BENCHMARKS["disk"].variants)), '{"jobs": []}'),
    ("loadgen-garbage", "http", "1k", "{{{{{"),
    ("syscall-garbage", "syscall", next(iter(BENCHMARKS["syscall"].variants)), "1 2 3\n"),
]


@pytest.mark.parametrize(("bench", "variant", "raw"), [c[1:] for c in TOOL_CASES],
                         ids=[c[0] for c in TOOL_CASES])  # fmt: skip
def test_garbled_tool_output_is_a_tool_output_error(bench, variant, raw, raw_dir) -> None:
    with pytest.raises(ToolOutputError) as caught:
        BENCHMARKS[bench]().parse(variant, raw, W)
    assert str(caught.value).strip()
    raw_dir()


def test_garbled_host_facts_are_not_guessed(raw_dir) -> None:
    facts = hostfacts.parse("mtu=abc\ncpu_count=\ngarbage line\nkernel=6.1\n")
    assert facts == {"mtu": None, "cpu_count": None, "kernel": "6.1"}
    raw_dir()


def test_a_tool_image_build_without_an_image_line_names_the_host(raw_dir) -> None:
    with pytest.raises(ValueError, match="^srv1: tool image build printed no image line"):
        images.parse_build_output("srv1", "binary abc /usr/bin/iperf3\n")
    raw_dir()


# -- every command builder, fed metacharacters --------------------------------------------


@dataclass
class _Recorder:
    """A stand-in Session that records the shell text it is asked to run."""

    host: Any = None
    text: str = ""

    def run(self, command, **_: Any):
        self.text = Session.render(command)

        class _Out:
            stdout = ""

        return _Out()


@pytest.mark.parametrize("value", METACHARS)
def test_session_render_keeps_every_argument_one_word(value, tmp_path) -> None:
    assert shlex.split(Session.render(["printf", "%s", value])) == ["printf", "%s", value]
    text = Session.render(["printf", "%s", value], env={"V": value})
    assert shlex.split(text)[:2] == ["export", f"V={value};"]  # ";" ends the export
    script = f"cd {shlex.quote(str(tmp_path))}; {text}; " 'printf "|%s" "$V"'
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=10)
    assert done.stdout == f"{value}|{value}"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("value", METACHARS)
def test_hostfacts_command_passes_the_address_as_one_word(value) -> None:
    rec = _Recorder()
    hostfacts.gather(rec, value)  # type: ignore[arg-type]
    words = shlex.split(rec.text)
    assert words[0:2] == ["sh", "-c"] and words[3:] == ["facts", value]


@pytest.mark.parametrize("value", METACHARS)
def test_tool_image_command_passes_binaries_and_engine_as_words(value) -> None:
    rec = _Recorder()
    rec.host = type("H", (), {"name": "srv1"})()
    with pytest.raises(ValueError, match="no image line"):
        images.ensure(rec, [value, "/usr/bin/iperf3"], "docker", f"docker -H {value}")  # type: ignore[arg-type]
    words = shlex.split(rec.text)
    assert words[-2:] == [value, "/usr/bin/iperf3"]
    assert f"ENGINE=docker -H {value}" in words


@dataclass(frozen=True)
class _ScratchUser(RootlessUser):
    scratch: str = ""

    @property
    def runtime_dir(self) -> str:
        return self.scratch


@pytest.mark.parametrize("value", METACHARS + ["a.b"])
def test_rootless_probe_matches_the_name_literally(value, tmp_path) -> None:
    runtime = tmp_path / f"run {value[:3]}"
    runtime.mkdir()
    subuid, subgid = tmp_path / "subuid", tmp_path / "subgid"
    subuid.write_text(f"{value}:100000:65536\n")
    subgid.write_text("other:100000:65536\n")
    user = _ScratchUser(name=value, uid=1000, gid=1000, home="/home/x", scratch=str(runtime))
    probe = rootless_probe(user, (str(subuid), str(subgid)))
    words = shlex.split(probe)
    assert words[:3] == ["[", "-d", str(runtime)] and words[-2:] == [str(subuid), str(subgid)]

    def run(script: str) -> int:
        return subprocess.run(["bash", "-c", f"cd {shlex.quote(str(tmp_path))}; {script}"],
                              capture_output=True, timeout=10).returncode  # fmt: skip

    # a name is one line of the id files, so one with a newline never matches (and runs nothing)
    assert (run(probe) == 0) is ("\n" not in value)
    # a near miss (one character replaced) must not match: the name is no pattern
    other = _ScratchUser(name=value[:-1] + ("X" if value[-1] != "X" else "Y"), uid=1000,
                         gid=1000, home="/home/x", scratch=str(runtime))  # fmt: skip
    assert run(rootless_probe(other, (str(subuid), str(subgid)))) != 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([runtime.name, "subuid",
                                                                 "subgid"])  # fmt: skip
