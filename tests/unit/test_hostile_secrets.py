"""The secret detector that keeps pasted secrets out of messages, logs and executed notebooks:
every password-hash format a shadow file, an htpasswd file or an application database holds,
private keys and API tokens, generated here by the tools that make them (openssl, bcrypt,
argon2, ssh-keygen) or built to their published layout, are all recognised; ordinary settings
values are not."""

from __future__ import annotations

import base64
import json
import random
import shutil
import string
import subprocess
from pathlib import Path

import pytest
import yaml

from pipeline.collect import inventory as inventory_mod

ROOT = Path(__file__).resolve().parents[2]
N = 200  # hashes per format: a format the detector half-knows shows up as a rate below 100%
CRYPT64 = "./" + string.digits + string.ascii_uppercase + string.ascii_lowercase
rng = random.Random(20261129)


def _passwords(n: int = N) -> list[str]:
    alphabet = string.ascii_letters + string.digits + "!#%&*+-=?@^_~"
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(6, 24))) for _ in range(n)]


def _crypt64(n: int) -> str:
    return "".join(rng.choice(CRYPT64) for _ in range(n))


def _openssl(flag: str) -> list[str]:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    done = subprocess.run(["openssl", "passwd", flag, "-stdin"], input="\n".join(_passwords()),
                          capture_output=True, text=True, check=True, timeout=120)  # fmt: skip
    hashes = done.stdout.split()
    assert len(hashes) == N
    return hashes


def _bcrypt() -> list[str]:
    bcrypt = pytest.importorskip("bcrypt")
    return [bcrypt.hashpw(p.encode(), bcrypt.gensalt(rounds=4)).decode() for p in _passwords()]


def _argon2() -> list[str]:
    argon2 = pytest.importorskip("argon2")
    hasher = argon2.PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)
    return [hasher.hash(p) for p in _passwords()]


# Built to the published layouts (libxcrypt's crypt(5)): the hash alphabet is crypt's base64
# ("./0-9A-Za-z"), so a '.' may fall anywhere in the hash.
def _yescrypt() -> list[str]:
    return [f"$y$j9T${_crypt64(22)}${_crypt64(43)}" for _ in range(N)]


def _gost_yescrypt() -> list[str]:
    return [f"$gy$j9T${_crypt64(22)}${_crypt64(43)}" for _ in range(N)]


def _scrypt() -> list[str]:
    return [f"$7$CU..../....{_crypt64(16)}${_crypt64(43)}" for _ in range(N)]


def _sha512_rounds() -> list[str]:
    return [f"$6$rounds=656000${_crypt64(16)}${_crypt64(86)}" for _ in range(N)]


def _django_pbkdf2() -> list[str]:
    def b64() -> str:
        return base64.b64encode(rng.randbytes(32)).decode()

    return [f"pbkdf2_sha256$870000${_crypt64(22)}${b64()}" for _ in range(N)]


def _tokens() -> list[str]:
    alnum = string.ascii_letters + string.digits

    def pick(n: int, alphabet: str = alnum) -> str:
        return "".join(rng.choice(alphabet) for _ in range(n))

    def jwt() -> str:
        def part(obj: dict) -> str:
            return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

        return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part({'sub': pick(8)})}.{pick(43)}"

    out = []
    for _ in range(N // 5):
        out += [f"ghp_{pick(36)}", f"AKIA{pick(16, string.ascii_uppercase + string.digits)}",
                f"xoxb-{pick(12, string.digits)}-{pick(24)}", jwt(),
                f"https://bench:{pick(12)}@registry.example.org/v2"]  # fmt: skip
    return out


def _private_keys(tmp_path: Path) -> list[str]:
    if shutil.which("ssh-keygen") is None:
        pytest.skip("ssh-keygen is not installed")
    out = []
    for i, extra in enumerate((["-t", "ed25519"], ["-t", "rsa", "-b", "1024", "-m", "PEM"],
                               ["-t", "ecdsa", "-m", "PKCS8"])):  # fmt: skip
        path = tmp_path / f"k{i}"
        subprocess.run(["ssh-keygen", "-q", *extra, "-N", "", "-C", "", "-f", str(path)],
                       check=True, timeout=60)  # fmt: skip
        text = path.read_text()
        out += [text, text.splitlines()[0], "\n".join(text.splitlines()[1:-1])]
    return out


FORMATS = {
    "sha512-crypt (openssl passwd -6)": lambda tmp: _openssl("-6"),
    "sha256-crypt (openssl passwd -5)": lambda tmp: _openssl("-5"),
    "md5-crypt (openssl passwd -1)": lambda tmp: _openssl("-1"),
    "apr1 (openssl passwd -apr1)": lambda tmp: _openssl("-apr1"),
    "bcrypt $2b$": lambda tmp: _bcrypt(),
    "argon2id": lambda tmp: _argon2(),
    "yescrypt $y$": lambda tmp: _yescrypt(),
    "gost-yescrypt $gy$": lambda tmp: _gost_yescrypt(),
    "scrypt $7$": lambda tmp: _scrypt(),
    "sha512-crypt with rounds": lambda tmp: _sha512_rounds(),
    "django pbkdf2_sha256": lambda tmp: _django_pbkdf2(),
    "api tokens": lambda tmp: _tokens(),
    "private keys (ssh-keygen)": _private_keys,
}


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_every_generated_secret_is_recognised(fmt, tmp_path) -> None:
    values = FORMATS[fmt](tmp_path)
    missed = [v for v in values if inventory_mod.secret_kind(v) is None]
    found = len(values) - len(missed)
    assert not missed, f"{fmt}: {found} of {len(values)} recognised ({found / len(values):.1%})"


@pytest.mark.parametrize("fmt", ["yescrypt $y$", "sha512-crypt (openssl passwd -6)"])
def test_a_hash_in_an_inventory_is_named_and_never_printed(fmt, tmp_path, capsys) -> None:
    secrets = FORMATS[fmt](tmp_path)[:20]
    doc = {"environment": "x", "ssh": {"user": secrets[0], "password": secrets[1]},
           "hosts": {f"h{i}": {"address": s} for i, s in enumerate(secrets[2:])}}  # fmt: skip
    path = tmp_path / "inv.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert inventory_mod.main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert "ssh.user: looks like key material (a password hash)" in err
    assert "hosts.h0.address: looks like key material (a password hash)" in err
    leaked = [s for s in secrets if s.split("$")[-1][:12] in err]
    assert not leaked, f"{len(leaked)} of {len(secrets)} hashes printed"


# Values a settings file holds, which must stay visible in messages (a detector that flags
# them would hide the mistake the user has to fix).
ORDINARY = [
    "native,docker-host,docker-bridge", "/var/lib/container-overhead-lab/ssh/id_ed25519",
    "~/.ssh/known_hosts", "10.77.0.11", "2001:db8::7", "node1.example.org", "std cmd",
    "udp,tcp", "0,20", "The study profile leaves out Kubernetes: it needs the built binaries.",
    "costs $5 a month", "$HOME/.ssh/id_ed25519", "${USER}", "sha256:" + "ab12" * 16,
    "docker-kata", "10.77.0.128/28", "co-bench", "root", "interference_probe",
]


def test_ordinary_settings_values_are_not_taken_for_secrets() -> None:
    flagged = [(v, inventory_mod.secret_kind(v)) for v in ORDINARY]
    assert [f for f in flagged if f[1]] == []


@pytest.mark.parametrize("name", ["params.yaml", "conf/profiles/demo.yaml",
                                  "conf/profiles/study.yaml", "inventory/lab.yaml",
                                  "inventory/example-hosts.yaml"])  # fmt: skip
def test_the_shipped_settings_hold_nothing_taken_for_a_secret(name) -> None:
    _, found = inventory_mod.redact(yaml.safe_load((ROOT / name).read_text()))
    assert found == []
