"""Parse and validate an inventory: which hosts exist, how to reach them, which role each plays.

An inventory is a YAML file (see ``inventory/example-hosts.yaml``)::

    environment: bare-metal          # [a-z0-9][a-z0-9-]*, names the data directory
    lab: false                       # optional; true = the embedded lab brings itself up
    ssh: {user, port, key_file, known_hosts, connect_timeout_s, sudo}
    hosts:
      <name>: {address, ssh: {...per-host override...}, macvlan: {parent, subnet, gateway,
               ip_range}, rootless: {user}}
    roles: {servers: [..], dc_client: <name>, internet_client: <name>}
    modes: [native, docker-host, ...]   # optional subset of the known modes
    kubernetes: {kubeconfig, namespace, host, kubectl, containerd_socket, nodes}  # optional

``load`` collects *every* problem it finds and raises one :class:`InventoryError` listing
them, one per line, each naming the file, the key path and the fix: a user editing an
inventory should see all of their mistakes at once, not one per run.

Decisions (documented here because users will meet them as error messages):

- ``address`` is an IPv4/IPv6 address or a DNS name (RFC 1123 labels, at most 253
  characters, the last label not all-numeric, so a mistyped IP such as ``10.0.0.300`` is
  reported as a bad IP instead of being resolved as a name).
- Relative ``key_file`` / ``known_hosts`` paths are resolved against the inventory file's
  directory (not the working directory, which differs between dvc, papermill and a shell);
  ``~`` is expanded first.
- The per-host ``ssh`` mapping may override any of the global ``ssh`` keys.
- A host may hold only one role: a server cannot be its own client (the measurement would
  never cross the network) and the datacenter client cannot double as the Internet client
  (the two paths must differ). Hosts without a role are allowed (spares) but are not
  returned by :meth:`Inventory.all_hosts`.
- Two hosts with the same address are an error even with different ports: two "hosts" on
  one machine would share CPU and NIC and confound the comparison.
- The private key is handled as a *path*: its content is read only to tell whether it is
  encrypted (its header, never printed), since a key with a passphrase cannot log in
  unattended. Any value that looks like key material, in any field, is named by its key
  path and never printed.
- The file is read by ``pipeline.settings_yaml`` (as DVC reads YAML: 1.2 core schema; aliases
  and keys given twice refused, size and depth bounded, a symbolic link out of the repository
  or of the inventory's directory refused). An unknown key is named with its line, its value
  never; the report shows the first 20 problems of a kind and counts the rest, and every check
  is linear in the host count.
- ``key_file`` and ``known_hosts`` are looked at with ``lstat``: a link is followed only to say
  where it leads, and a fix never suggests ``chmod`` on a file the user does not own or that
  lies outside their home, the repository and the inventory's directory (a link to
  ``/etc/ssh/ssh_host_*_key``): "point key_file at a copy you own".
- ``known_hosts`` holds one line per host (plain or hashed, ``[address]:port`` for a port other
  than 22). Markers (``@revoked``, ``@cert-authority``) and host patterns (``*``, ``?``, ``!``)
  are not supported: paramiko fails on a file with a marker and never matches a pattern, so
  both are named with their line before a connection is tried.

    python -m pipeline.inventory check FILE   # every problem, one a line; exit 2
"""

from __future__ import annotations

import base64
import binascii
import difflib
import fnmatch
import hashlib
import hmac
import ipaddress
import os
import re
import stat
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline import settings_yaml

__all__ = [
    "Host",
    "Inventory",
    "InventoryError",
    "Kubernetes",
    "Macvlan",
    "Rootless",
    "SshSettings",
    "load",
]

ENVIRONMENT_RE = re.compile(r"[a-z0-9][a-z0-9-]*")
HOST_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
DNS_LABEL_RE = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")
USER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*\$?")
IFNAME_RE = re.compile(r"[A-Za-z0-9_.@-]{1,15}")

TOP_KEYS = ("environment", "lab", "ssh", "hosts", "roles", "modes", "kubernetes")
SSH_KEYS = ("user", "port", "key_file", "known_hosts", "connect_timeout_s", "sudo")
HOST_KEYS = ("address", "ssh", "macvlan", "rootless")
ROOTLESS_KEYS = ("user",)
MACVLAN_KEYS = ("parent", "subnet", "gateway", "ip_range")
KUBERNETES_KEYS = ("kubeconfig", "namespace", "host", "kubectl", "containerd_socket", "nodes")
DEFAULT_CONTAINERD_SOCKET = "/run/containerd/containerd.sock"
ROLE_KEYS = ("servers", "dc_client", "internet_client")

DEFAULT_PORT = 22
DEFAULT_CONNECT_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class SshSettings:
    """How to log in to one host. ``key_file`` is a path; the key itself is never loaded."""

    user: str
    port: int
    key_file: Path
    known_hosts: Path
    connect_timeout_s: float
    # A login other than root may run the steps that need root through `sudo -n` (no password
    # prompt: a NOPASSWD rule). False: those steps are skipped with the privilege they need.
    sudo: bool = False

    @property
    def privileged(self) -> bool:
        """Whether steps that need root can run: the login is root, or sudo is allowed."""
        return self.user == "root" or self.sudo


@dataclass(frozen=True)
class Macvlan:
    """The macvlan network a host's containers get in the ``macvlan`` mode."""

    parent: str
    subnet: str
    gateway: str
    ip_range: str


@dataclass(frozen=True)
class Rootless:
    """The unprivileged user the rootless modes run as on a host (it needs /etc/subuid and
    /etc/subgid ranges, an XDG_RUNTIME_DIR and, for rootless-docker, its own dockerd)."""

    user: str


@dataclass(frozen=True)
class Kubernetes:
    """The cluster the Kubernetes modes run in. ``kubeconfig`` is a path on ``host`` (where
    kubectl runs; None: the first server), never read by the study; ``containerd_socket`` is
    the CRI containerd's socket on each server node (``{node}``: the host's name), through
    which the tool image is imported; ``nodes`` maps a host to its Kubernetes node name
    (default: the same name)."""

    kubeconfig: str
    namespace: str
    host: str | None = None
    kubectl: str = "kubectl"
    containerd_socket: str = DEFAULT_CONTAINERD_SOCKET
    nodes: dict[str, str] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class Host:
    name: str
    address: str
    ssh: SshSettings
    macvlan: Macvlan | None = None
    rootless: Rootless | None = None


@dataclass(frozen=True)
class Inventory:
    environment: str
    lab: bool
    hosts: dict[str, Host]
    servers: tuple[Host, ...]
    dc_client: Host
    internet_client: Host | None
    modes: tuple[str, ...] | None
    source: Path = field(compare=False)
    kubernetes: Kubernetes | None = None

    @property
    def manager(self) -> Host:
        """The Swarm manager: by convention the first server."""
        return self.servers[0]

    def all_hosts(self) -> tuple[Host, ...]:
        """Every host that plays a role: servers (manager first), dc client, Internet client."""
        hosts = [*self.servers, self.dc_client]
        if self.internet_client is not None:
            hosts.append(self.internet_client)
        return tuple(hosts)

    def role_of(self, host_name: str) -> str | None:
        """``"manager"``, ``"server"``, ``"dc_client"``, ``"internet_client"`` or None."""
        if host_name not in self.hosts:
            raise KeyError(f"no host {host_name!r} in {self.source}; known: {sorted(self.hosts)}")
        if host_name == self.manager.name:
            return "manager"
        if any(h.name == host_name for h in self.servers):
            return "server"
        if host_name == self.dc_client.name:
            return "dc_client"
        if self.internet_client is not None and host_name == self.internet_client.name:
            return "internet_client"
        return None


class InventoryError(ValueError):
    """An inventory that cannot be used. ``problems`` holds one line per problem."""

    def __init__(self, source: Path | str, problems: list[str], kinds: list[str] | None = None):
        self.source = Path(source)
        self.problems = list(problems)
        n = len(self.problems)
        head = f"invalid inventory {self.source}: {n} problem{'s' if n != 1 else ''}"
        # A large inventory with one mistake repeated must not print it a thousand times.
        by_kind = dict(zip(self.problems, kinds, strict=True)) if kinds else {}
        shown = settings_yaml.bounded(
            self.problems, kind=lambda p: by_kind.get(p) or settings_yaml.problem_kind(p))
        super().__init__("\n".join([head, *(f"  - {p}" for p in shown)]))


# --------------------------------------------------------------------------------------------
# Settings files as untrusted input: read by pipeline.settings_yaml (params.yaml and the
# profiles are read the same way), whose secret detector, placeholder and YAML messages are
# re-exported here for the modules that name them.

MAX_YAML_BYTES = settings_yaml.MAX_BYTES
REPO = Path(__file__).resolve().parents[2]
secret_kind = settings_yaml.secret_kind
redact = settings_yaml.redact
Redacted = settings_yaml.Redacted
yaml_problem = settings_yaml.yaml_problem
MISSING_FIX = ("check the path (e.g. in params.yaml) or create it from "
               "inventory/example-hosts.yaml")


class _Problems:
    """Collects problems as "<file>: <key path>: <what is wrong>; <fix>" lines, with the kind
    of each (its message with names and numbers blanked) for the bounded report."""

    def __init__(self, source: Path):
        self.source = source
        self.items: list[str] = []
        self.kinds: list[str] = []
        self.secret_paths: set[str] = set()
        self.lines: dict[str, int] = {}

    def add(self, path: str, message: str, *, about_value: bool = True) -> None:
        if about_value and path in self.secret_paths:
            return  # already named as a secret; a message about its value would only repeat it
        where = f"{self.source}: {path}" if path else str(self.source)
        self.items.append(f"{where}: {message}")
        self.kinds.append(settings_yaml.problem_kind(message))


def _settings_root(source: Path) -> Path | None:
    """Where a symbolic link to the inventory may lead: the repository for an inventory inside
    it, else the inventory's own directory (settings_yaml.read's default)."""
    return REPO if REPO in Path(os.path.abspath(source)).parents else None


def _read_yaml(path: Path, problems: _Problems) -> Any:
    try:
        doc = settings_yaml.read(path, root=_settings_root(path), what="an inventory",
                                 missing_fix=MISSING_FIX)  # fmt: skip
    except settings_yaml.SettingsFileError as e:
        syntax = e.problem.startswith("not valid YAML") and "aliases" not in e.problem
        problems.add("", e.problem + ("; fix the syntax (indentation, quotes, colons)"
                                      if syntax else ""))  # fmt: skip
        return None
    problems.lines = doc.lines
    for where, kind in doc.secrets:
        what = "key material, not a path" if where.endswith("key_file") else "key material"
        problems.add(
            where,
            f"looks like {what} ({kind}); the value is not shown. Key material never belongs in an "
            "inventory: remove it, keep the private key in a file (chmod 600) and give that "
            "file's path as ssh.key_file",
        )
        problems.secret_paths.add(where)
    for where, message in doc.duplicates:
        problems.add(where, message)
    data = doc.data
    if data is None:
        problems.add(
            "",
            "the file is empty: it must be a mapping with keys environment, ssh, hosts, "
            "roles (see inventory/example-hosts.yaml)",
        )
        return None
    if not isinstance(data, dict):
        problems.add(
            "",
            f"the top level is a {_type_name(data)}, not a mapping: write "
            "`environment: ...`, `ssh: ...`, `hosts: ...`, `roles: ...` at the top level",
        )
        return None
    return data


# --------------------------------------------------------------------------------------------
# small helpers


def _join(path: str, key: object) -> str:
    return f"{path}.{key}" if path else str(key)


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    return {dict: "mapping", list: "list", str: "string", bool: "boolean"}.get(
        type(value), type(value).__name__
    )


# Past this many names a suggestion costs more than it helps (difflib compares with each) and a
# list of them would fill the screen.
SUGGEST_AMONG = 200
LIST_AT_MOST = 12


def _suggest(word: str, choices: Iterable[str]) -> str:
    choices = list(choices)
    if len(choices) <= SUGGEST_AMONG:
        close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
        if close:
            return f"did you mean {close[0]!r}?"
    if len(choices) > LIST_AT_MOST:
        return f"allowed: {', '.join(choices[:LIST_AT_MOST - 2])}, ... ({len(choices)} in all)"
    return "allowed: " + ", ".join(choices)


def _check_keys(
    mapping: dict, allowed: Iterable[str], path: str, problems: _Problems
) -> None:
    allowed = tuple(allowed)
    for key in mapping:
        if key not in allowed:
            # Only the key is named (and only when it looks like a name), never its value: a
            # file that is not an inventory may hold anything, secrets included.
            shown = settings_yaml.key_text(key)
            line = problems.lines.get(_join(path, key))
            at = f" (line {line})" if line else ""
            suggest = _suggest(str(key), allowed) if not shown.startswith("(") else \
                f"allowed: {', '.join(allowed)}"
            problems.add(
                _join(path, key if not shown.startswith("(") else "?"),
                f"unknown key {shown}{at}: {suggest}",
                about_value=False,
            )


def _mapping(value: Any, path: str, problems: _Problems, example: str) -> dict | None:
    if isinstance(value, dict):
        return value
    problems.add(path, f"must be a mapping, got a {_type_name(value)}: write it as {example}")
    return None


def _require(mapping: dict, key: str, path: str, problems: _Problems, hint: str) -> Any:
    if key not in mapping or mapping[key] is None:
        problems.add(_join(path, key), f"required key is missing: add `{key}: {hint}`")
        return None
    return mapping[key]


def _looks_like_key_material(text: str) -> bool:
    return "\n" in text or "PRIVATE KEY" in text or len(text) > 1024


def _valid_address(text: str) -> str | None:
    """Return None if ``text`` is an IP address or a DNS name, else the reason it is not."""
    try:
        ipaddress.ip_address(text)
        return None
    except ValueError:
        pass
    name = text[:-1] if text.endswith(".") else text
    labels = name.split(".")
    if re.fullmatch(r"[0-9.]+", name) or labels[-1].isdigit():
        return "not a valid IP address"
    if ":" in text:
        return "not a valid IPv6 address"
    if len(name) > 253 or not all(DNS_LABEL_RE.fullmatch(label) for label in labels):
        return "neither an IP address nor a valid DNS name"
    return None


# --------------------------------------------------------------------------------------------
# sections


def _ssh_fields(
    raw: dict, path: str, base_dir: Path, problems: _Problems, check_files: bool
) -> dict[str, Any]:
    """Validate the ssh keys present in ``raw``; return the good ones, converted."""
    out: dict[str, Any] = {}
    if "user" in raw:
        user = raw["user"]
        if not isinstance(user, str) or not USER_RE.fullmatch(user):
            problems.add(
                _join(path, "user"),
                f"{user!r} is not a valid user name: use the login name, e.g. `user: root`",
            )
        else:
            out["user"] = user
    if "port" in raw:
        port = raw["port"]
        if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
            problems.add(
                _join(path, "port"),
                f"port {port!r} is out of range: use an integer 1..65535 (sshd's default is 22)",
            )
        else:
            out["port"] = port
    if "connect_timeout_s" in raw:
        t = raw["connect_timeout_s"]
        if isinstance(t, bool) or not isinstance(t, int | float) or not 0 < t <= 600:
            problems.add(
                _join(path, "connect_timeout_s"),
                f"{t!r} is not a timeout: use seconds as a number in (0, 600], e.g. 10",
            )
        else:
            out["connect_timeout_s"] = float(t)
    if "sudo" in raw:
        sudo = raw["sudo"]
        if not isinstance(sudo, bool):
            problems.add(
                _join(path, "sudo"),
                f"must be true or false, got {sudo!r}: true lets a login other than root run "
                "the steps that need root with `sudo -n` (a NOPASSWD rule)",
            )
        else:
            out["sudo"] = sudo
    for key in ("key_file", "known_hosts"):
        if key not in raw:
            continue
        value = raw[key]
        kpath = _join(path, key)
        if not isinstance(value, str) or not value.strip():
            problems.add(kpath, f"must be a file path, got a {_type_name(value)}")
            continue
        if isinstance(value, Redacted):
            continue  # already named as a secret
        if key == "key_file" and _looks_like_key_material(value):
            # Never echo the value: it is probably the private key pasted in.
            problems.add(
                kpath,
                "looks like key material, not a path: never put a key in the inventory; "
                "save it to a file (chmod 600) and give its path, e.g. ~/.ssh/id_ed25519",
            )
            continue
        p = Path(value).expanduser()
        if not p.is_absolute():
            p = base_dir / p
        out[key] = p
        if check_files:
            if key == "key_file":
                _check_key_file(p, kpath, problems, base_dir)
            else:
                _check_known_hosts(p, kpath, problems, base_dir)
    return out


def _controlled(target: Path, st: os.stat_result, places: Iterable[Path]) -> bool:
    """Whether the file is the user's to change: they own it and it lies under one of
    ``places`` (their home, the repository, the inventory's directory)."""
    return st.st_uid == os.getuid() and any(
        target == d or d in target.parents for d in (Path(os.path.realpath(x)) for x in places)
    )


def _places(base_dir: Path) -> tuple[Path, ...]:
    return (Path.home(), REPO, base_dir)


def _resolve_link(
    p: Path, lst: os.stat_result, kpath: str, what: str, problems: _Problems, base_dir: Path
) -> tuple[Path, os.stat_result, bool] | None:
    """The file a key or known_hosts path names, without following a link blindly: (the real
    file, its status, whether the user controls it), or None once a problem is reported."""
    if not stat.S_ISLNK(lst.st_mode):  # named directly: the user's to change if they own it
        return p, lst, lst.st_uid == os.getuid()
    target = Path(os.path.realpath(p))
    try:
        st = os.stat(target)
    except OSError:
        problems.add(kpath, f"{p} is a symbolic link to {target}, which does not exist: point "
                            f"{kpath.rsplit('.', 1)[-1]} at the {what} itself")  # fmt: skip
        return None
    return target, st, _controlled(target, st, _places(base_dir))


def _look_at(p: Path, kpath: str, what: str, create: str, problems: _Problems,
             base_dir: Path) -> tuple[Path, os.stat_result, bool] | None:  # fmt: skip
    """A key or known_hosts file, its link looked at and not followed (``_resolve_link``): the
    file it names, its stat and whether the user controls it; None (and the problem said, with
    ``create`` as the fix) when it is missing or unreadable."""
    try:
        lst = os.lstat(p)
    except FileNotFoundError:
        problems.add(kpath, f"{what} {p} does not exist: {create} "
                            "(for the lab: `python -m pipeline.lab up`)")  # fmt: skip
        return None
    except OSError as e:
        problems.add(kpath, f"cannot stat {what} {p} ({e.strerror}): fix the path")
        return None
    return _resolve_link(p, lst, kpath, what if what.endswith("file") else f"{what} file",
                         problems, base_dir)  # fmt: skip


def _check_key_file(p: Path, kpath: str, problems: _Problems, base_dir: Path) -> None:
    if p.suffix == ".pub":
        problems.add(
            kpath,
            f"{p} is a public key: name the private key ({p.with_suffix('')})",
        )
        return
    found = _look_at(p, kpath, "private key", f"create one with `ssh-keygen -t ed25519 -f {p}` "
                     "and authorize its .pub on the hosts, or fix the path", problems, base_dir)
    if found is None:
        return
    target, st, controlled = found
    copy = ("point key_file at a copy you own (`install -m 600 SOURCE ~/.ssh/co-bench`), "
            "or at a key of your own")
    if target != p and not controlled:
        # Never suggest changing the file a link leads to: it may be a system file
        # (/etc/ssh/ssh_host_*_key) whose mode other software relies on.
        problems.add(kpath, f"{p} is a symbolic link to {target}, a file that is not yours to "
                            f"change (not owned by you, or outside your home directory and the "
                            f"repository): {copy}")  # fmt: skip
        return
    if not stat.S_ISREG(st.st_mode):
        problems.add(kpath, f"{p} is not a regular file: name the private key file")
        return
    if not os.access(target, os.R_OK):
        fix = f"chmod 600 {target} and make sure you own it" if controlled else copy
        problems.add(kpath, f"private key {p} is not readable by this user: {fix}")
    else:
        encrypted = key_encryption(target)
        if encrypted:
            problems.add(
                kpath,
                f"private key {p} is encrypted ({encrypted}): the study logs in unattended "
                "and does not use an agent, so it cannot give the passphrase. Use a key "
                f"without one for the study: `ssh-keygen -t ed25519 -N '' -f {p.parent}/"
                "co-bench` and authorize its .pub on the hosts, then name it here",
            )
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        # Same rule as OpenSSH ("UNPROTECTED PRIVATE KEY FILE"): ssh would refuse it too.
        fix = f"chmod 600 {target}" if controlled else copy
        problems.add(
            kpath,
            f"private key {p} is accessible by group/others (mode {mode:04o}); ssh refuses "
            f"such keys: {fix}",
        )


def key_encryption(p: Path) -> str | None:
    """How the private key file at ``p`` is encrypted ("a passphrase, aes256-ctr"), or None
    when it is not (or its format is not recognised: loading it will say so). Reads the
    header only; nothing of the key is returned."""
    try:
        with open(p, "rb") as f:
            head = f.read(64 * 1024).decode("ascii", errors="replace")
    except OSError:
        return None
    if "BEGIN ENCRYPTED PRIVATE KEY" in head or "Proc-Type: 4,ENCRYPTED" in head:
        return "a passphrase (PEM)"
    m = re.search(r"-----BEGIN OPENSSH PRIVATE KEY-----(.*?)-----END", head, re.S)
    if m is None:
        return None
    try:
        blob = base64.b64decode("".join(m.group(1).split()))
    except (binascii.Error, ValueError):
        return None
    magic = b"openssh-key-v1\0"
    if not blob.startswith(magic) or len(blob) < len(magic) + 4:
        return None
    n = int.from_bytes(blob[len(magic):len(magic) + 4], "big")
    cipher = blob[len(magic) + 4:len(magic) + 4 + n].decode("ascii", errors="replace")
    if cipher == "none":
        return None
    return f"a passphrase, cipher {cipher}" if re.fullmatch(r"[a-z0-9@.-]{1,40}", cipher) \
        else "a passphrase"


def _check_known_hosts(p: Path, kpath: str, problems: _Problems, base_dir: Path) -> None:
    found = _look_at(p, kpath, "known_hosts file", "add the hosts' keys after verifying them "
                     f"out of band, e.g. `ssh-keyscan -p PORT ADDRESS >> {p}`", problems, base_dir)
    if found is None:
        return
    target, st, controlled = found
    if not stat.S_ISREG(st.st_mode):
        problems.add(kpath, f"{p} is not a regular file: name the known_hosts file")
    elif not os.access(target, os.R_OK):
        fix = f"chmod u+r {target}" if controlled else \
            "point known_hosts at a copy you own (`cp SOURCE ~/.ssh/known_hosts_co-bench`)"
        problems.add(kpath, f"known_hosts file {p} is not readable: {fix}")
    else:
        for message in KnownHosts.read(target).unreadable:
            problems.add(kpath, message)


def readable_fix(path: Path, key: str) -> str:
    """How to make a file the study must read readable, without suggesting a change to a file
    the user does not own."""
    try:
        owned = os.stat(path).st_uid == os.getuid()
    except OSError:
        owned = False
    return f"chmod u+r {path}" if owned else f"point {key} at a copy you own"


# A known_hosts host field: a plain name or [name]:port, a hashed |1|salt|hash, or a pattern
_PATTERN_CHARS = re.compile(r"[*?]|^!")


@dataclass(frozen=True)
class KnownHosts:
    """What the study can use of a known_hosts file: paramiko's reader knows neither markers
    (it fails on the whole file) nor patterns (it never matches them), so both are found here
    first and named with their line and what to write instead."""

    path: Path
    names: frozenset[str] = frozenset()
    hashed: tuple[tuple[bytes, bytes], ...] = ()
    patterns: tuple[tuple[int, str], ...] = ()
    unreadable: tuple[str, ...] = ()

    @classmethod
    def read(cls, path: Path) -> KnownHosts:
        """The file's entries; a file that cannot be read gives an empty one (the caller's
        own open says why)."""
        try:
            with open(path, "rb") as f:
                text = f.read(MAX_YAML_BYTES * 16).decode("utf-8", errors="replace")
        except OSError:
            return cls(path)
        names: set[str] = set()
        hashed: list[tuple[bytes, bytes]] = []
        patterns: list[tuple[int, str]] = []
        unreadable: list[str] = []
        one_line = ("the study reads one line per host: its address (`[address]:port` for a "
                    "port other than 22), plain or hashed, then its key, as "
                    "`ssh-keyscan [-H] -p PORT ADDRESS` writes it")
        for n, line in enumerate(text.splitlines(), 1):
            fields = line.split()
            if not fields or fields[0].startswith("#"):
                continue
            if fields[0].startswith("@"):
                marker = fields[0] if re.fullmatch(r"@[a-z-]{1,20}", fields[0]) else "@..."
                what = {
                    "@revoked": "remove the line: a key the study does not list is never "
                                "trusted, so a revoked key needs no marker",
                    "@cert-authority": "host certificates are not supported: list each "
                                       "host's own key instead",
                }.get(marker, "remove the marker")  # fmt: skip
                unreadable.append(f"{path} line {n}: the {marker} marker is not supported "
                                  f"(the SSH library cannot read a file holding one): {what}; "
                                  f"{one_line}")  # fmt: skip
                continue
            if len(fields) >= 3:
                try:
                    base64.b64decode(fields[2], validate=True)
                except (binascii.Error, ValueError):
                    unreadable.append(f"{path} line {n}: the key is not valid base64 (a "
                                      f"damaged line): remove it; {one_line}")  # fmt: skip
                    continue
            for name in fields[0].split(","):
                if name.startswith("|1|"):
                    try:
                        salt, digest = (base64.b64decode(x) for x in name[3:].split("|", 1))
                    except (binascii.Error, ValueError):
                        continue
                    hashed.append((salt, digest))
                elif _PATTERN_CHARS.search(name):
                    patterns.append((n, name))
                else:
                    names.add(name)
        return cls(path, frozenset(names), tuple(hashed), tuple(patterns), tuple(unreadable))

    def lists(self, address: str, port: int) -> bool:
        """Whether a line names the host exactly (plainly or hashed)."""
        name = address if port == DEFAULT_PORT else f"[{address}]:{port}"
        if name in self.names:
            return True
        return any(hmac.new(salt, name.encode(), hashlib.sha1).digest() == digest
                   for salt, digest in self.hashed)  # fmt: skip

    def problem(self, address: str, port: int) -> tuple[str, str] | None:
        """(cause, fix) when the study cannot use this file for the host: a marker anywhere in
        it, or the host listed only through a pattern; None otherwise."""
        if self.unreadable:
            return (f"known_hosts {self.path} holds what the study does not support: "
                    f"{self.unreadable[0].split(': ', 1)[1]}",
                    f"fix {self.path} (every such line is listed by `python -m "
                    "pipeline.inventory check`)")  # fmt: skip
        if not self.patterns or self.lists(address, port):
            return None
        name = address if port == DEFAULT_PORT else f"[{address}]:{port}"
        for n, pattern in self.patterns:
            if not pattern.startswith("!") and fnmatch.fnmatchcase(name, pattern):
                return (f"{self.path} line {n} names the host only through the pattern "
                        f"{pattern!r}: host patterns are not supported",
                        f"add a line for the host itself after verifying its key: "
                        f"`ssh-keyscan -p {port} {address} >> {self.path}`")  # fmt: skip
        return None


def known_hosts_problem(path: Path, address: str, port: int) -> tuple[str, str] | None:
    """(cause, fix) when the known_hosts file at ``path`` holds something the study does not
    support for this host (markers, patterns), else None; what ``remote`` checks before
    handing the file to paramiko."""
    return KnownHosts.read(path).problem(address, port)


def _macvlan(
    raw: Any, path: str, host_address: str | None, problems: _Problems
) -> Macvlan | None:
    m = _mapping(
        raw, path, problems,
        "{parent: eth0, subnet: 10.0.0.0/24, gateway: 10.0.0.1, ip_range: 10.0.0.128/28}",
    )
    if m is None:
        return None
    _check_keys(m, MACVLAN_KEYS, path, problems)
    hints = {
        "parent": "eth0", "subnet": "10.0.0.0/24", "gateway": "10.0.0.1",
        "ip_range": "10.0.0.128/28",
    }
    vals = {k: _require(m, k, path, problems, hints[k]) for k in MACVLAN_KEYS}
    ok = True
    parent = vals["parent"]
    if parent is not None and (not isinstance(parent, str) or not IFNAME_RE.fullmatch(parent)):
        problems.add(
            _join(path, "parent"),
            f"{parent!r} is not a network interface name: give the host NIC, e.g. eth0",
        )
        ok = False
    nets: dict[str, Any] = {}
    for key in ("subnet", "ip_range"):
        v = vals[key]
        if v is None:
            ok = False
            continue
        try:
            nets[key] = ipaddress.ip_network(str(v), strict=True)
        except ValueError as e:
            fix = ""
            try:
                fix = f": use {ipaddress.ip_network(str(v), strict=False)}"
            except ValueError:
                fix = f": use CIDR notation, e.g. {hints[key]}"
            problems.add(_join(path, key), f"{v!r} is not a valid network ({e}){fix}")
            ok = False
    gw = None
    if vals["gateway"] is not None:
        try:
            gw = ipaddress.ip_address(str(vals["gateway"]))
        except ValueError:
            problems.add(
                _join(path, "gateway"),
                f"{vals['gateway']!r} is not an IP address: give the router's address",
            )
            ok = False
    subnet, ip_range = nets.get("subnet"), nets.get("ip_range")
    if subnet is not None and ip_range is not None:
        if ip_range.version != subnet.version or not ip_range.subnet_of(subnet):
            problems.add(
                _join(path, "ip_range"),
                f"ip_range {ip_range} is not inside subnet {subnet}: pick a range within it",
            )
            ok = False
    if subnet is not None and gw is not None and gw not in subnet:
        problems.add(
            _join(path, "gateway"),
            f"gateway {gw} is not inside subnet {subnet}: give the subnet's router",
        )
        ok = False
    if ip_range is not None:
        for what, addr in (("gateway", gw), ("the host's own address", host_address)):
            try:
                a = ipaddress.ip_address(str(addr)) if addr is not None else None
            except ValueError:
                a = None
            if a is not None and a.version == ip_range.version and a in ip_range:
                problems.add(
                    _join(path, "ip_range"),
                    f"ip_range {ip_range} contains {what} ({a}): containers would collide "
                    "with it; choose a range of unused addresses",
                )
                ok = False
    if not ok:
        return None
    return Macvlan(parent=parent, subnet=str(subnet), gateway=str(gw), ip_range=str(ip_range))


def _rootless(raw: Any, path: str, problems: _Problems) -> Rootless | None:
    m = _mapping(raw, path, problems, "{user: co-bench}")
    if m is None:
        return None
    _check_keys(m, ROOTLESS_KEYS, path, problems)
    user = _require(m, "user", path, problems, "co-bench")
    if user is None:
        return None
    if not isinstance(user, str) or not USER_RE.fullmatch(user) or len(user) > 32:
        problems.add(_join(path, "user"), f"{user!r} is not a user name: e.g. `user: co-bench`")
        return None
    if user == "root":
        problems.add(
            _join(path, "user"),
            "the rootless user must not be root (the rootless modes would measure rootful "
            "engines): name an unprivileged user with /etc/subuid and /etc/subgid ranges",
        )
        return None
    return Rootless(user=user)


def _absolute_path(value: Any, path: str, problems: _Problems, example: str) -> str | None:
    if not isinstance(value, str) or not value.startswith("/") or "\n" in value:
        problems.add(path, f"must be an absolute path on the host, e.g. `{example}`")
        return None
    return value


def _kubernetes(raw: Any, hosts: dict[str, Any], problems: _Problems) -> Kubernetes | None:
    path = "kubernetes"
    m = _mapping(raw, path, problems, "{kubeconfig: /etc/kubernetes/admin.conf, namespace: co}")
    if m is None:
        return None
    _check_keys(m, KUBERNETES_KEYS, path, problems)
    found: dict[str, Any] = {}
    kubeconfig = _require(m, "kubeconfig", path, problems, "/etc/kubernetes/admin.conf")
    if kubeconfig is not None:
        found["kubeconfig"] = _absolute_path(
            kubeconfig, _join(path, "kubeconfig"), problems, "kubeconfig: /root/.kube/config"
        )
    namespace = _require(m, "namespace", path, problems, "container-overhead")
    if namespace is not None:
        if not isinstance(namespace, str) or not re.fullmatch(
            r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", namespace
        ):
            problems.add(
                _join(path, "namespace"),
                f"{namespace!r} is not a Kubernetes namespace name (lower-case letters, digits "
                "and '-', at most 63): e.g. `namespace: container-overhead`",
            )
        else:
            found["namespace"] = namespace
    if m.get("host") is not None:
        found["host"] = _role_host(m["host"], _join(path, "host"), hosts, problems)
    if m.get("kubectl") is not None:
        kubectl = m["kubectl"]
        if isinstance(kubectl, str) and re.fullmatch(r"[A-Za-z0-9_.-]+", kubectl):
            found["kubectl"] = kubectl  # a command on PATH
        else:
            found["kubectl"] = _absolute_path(
                kubectl, _join(path, "kubectl"), problems, "kubectl: /usr/local/bin/kubectl"
            )
    if m.get("containerd_socket") is not None:
        found["containerd_socket"] = _absolute_path(
            m["containerd_socket"], _join(path, "containerd_socket"), problems,
            f"containerd_socket: {DEFAULT_CONTAINERD_SOCKET}",
        )  # fmt: skip
    if m.get("nodes") is not None:
        nodes = _mapping(m["nodes"], _join(path, "nodes"), problems, "{node1: worker-1}")
        found["nodes"] = {}
        for host, node in (nodes or {}).items():
            where = _join(_join(path, "nodes"), host)
            if _role_host(host, where, hosts, problems) is None:
                continue
            if not isinstance(node, str) or not re.fullmatch(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?",
                                                              node):  # fmt: skip
                problems.add(where, f"{node!r} is not a Kubernetes node name: e.g. worker-1")
                continue
            found["nodes"][host] = node
    if any(value is None for value in found.values()) or len(found) < 2:
        return None  # already reported
    return Kubernetes(**found)


def _role_host(value: Any, path: str, hosts: dict[str, Any], problems: _Problems) -> str | None:
    if not isinstance(value, str):
        problems.add(path, f"must be a host name (string), got a {_type_name(value)}")
        return None
    if value not in hosts:
        problems.add(
            path,
            f"names unknown host {value!r}: {_suggest(value, hosts)} "
            "(define it under `hosts` or fix the name)",
        )
        return None
    return value


# --------------------------------------------------------------------------------------------
# entry point


def load(
    path: str | Path, known_modes: Iterable[str], *, check_files: bool = True
) -> Inventory:
    """Read and validate the inventory at ``path``.

    ``known_modes`` are the execution modes the code implements; a ``modes`` list naming
    anything else is an error. ``check_files=False`` skips the checks that the key and
    known_hosts files exist (the lab's files exist only while the lab is up) but keeps every
    structural check.
    """
    source = Path(path).expanduser()
    problems = _Problems(source)
    data = _read_yaml(source, problems)
    if data is None:
        raise InventoryError(source, problems.items, problems.kinds)
    base_dir = source.resolve().parent
    known_modes = tuple(known_modes)

    _check_keys(data, TOP_KEYS, "", problems)

    # environment ------------------------------------------------------------------------
    environment = _require(data, "environment", "", problems, "my-lab")
    if environment is not None and (
        not isinstance(environment, str) or not ENVIRONMENT_RE.fullmatch(environment)
    ):
        fixed = re.sub(r"[^a-z0-9-]+", "-", str(environment).lower()).strip("-") or "my-env"
        problems.add(
            "environment",
            f"{environment!r} must match [a-z0-9][a-z0-9-]* (it names a data directory): "
            f"e.g. `environment: {fixed}`",
        )
        environment = None

    lab = data.get("lab", False)
    if not isinstance(lab, bool):
        problems.add("lab", f"must be true or false, got {lab!r}")
        lab = False

    # ssh defaults -----------------------------------------------------------------------
    ssh_raw = _require(data, "ssh", "", problems, "{user: ..., key_file: ..., known_hosts: ...}")
    ssh_defaults: dict[str, Any] = {
        "port": DEFAULT_PORT, "connect_timeout_s": DEFAULT_CONNECT_TIMEOUT_S, "sudo": False,
    }
    if ssh_raw is not None:
        ssh_map = _mapping(ssh_raw, "ssh", problems, "{user: root, key_file: ~/.ssh/id_ed25519}")
        if ssh_map is not None:
            _check_keys(ssh_map, SSH_KEYS, "ssh", problems)
            for key, hint in (
                ("user", "root"), ("key_file", "~/.ssh/id_ed25519"),
                ("known_hosts", "~/.ssh/known_hosts"),
            ):
                _require(ssh_map, key, "ssh", problems, hint)
            ssh_defaults.update(_ssh_fields(ssh_map, "ssh", base_dir, problems, check_files))

    # hosts ------------------------------------------------------------------------------
    hosts_raw = _require(data, "hosts", "", problems, "{node1: {address: 10.0.0.11}}")
    hosts: dict[str, Host] = {}
    host_names: dict[str, Any] = {}  # every named host, even if invalid (for role checks)
    addresses: dict[str, str] = {}
    if hosts_raw is not None:
        hmap = _mapping(hosts_raw, "hosts", problems, "{node1: {address: 10.0.0.11}, ...}")
        if hmap is not None and not hmap:
            problems.add("hosts", "no hosts defined: add at least the servers and the dc client")
        for name, raw in (hmap or {}).items():
            hpath = _join("hosts", name)
            host_names[str(name)] = raw
            if not isinstance(name, str) or not HOST_NAME_RE.fullmatch(name):
                problems.add(
                    hpath,
                    f"host name {name!r} is not usable (it names files and log lines): use "
                    "letters, digits, '-', '_', '.', e.g. node1",
                )
                continue
            h = _mapping(raw, hpath, problems, "{address: 10.0.0.11}")
            if h is None:
                continue
            _check_keys(h, HOST_KEYS, hpath, problems)
            address = _require(h, "address", hpath, problems, "10.0.0.11")
            if address is not None:
                reason = _valid_address(str(address)) if isinstance(address, str) else (
                    f"must be a string, got a {_type_name(address)}"
                )
                if reason:
                    problems.add(
                        _join(hpath, "address"),
                        f"{address!r} is {reason}: give an IPv4/IPv6 address or a DNS name",
                    )
                    address = None
                else:
                    try:
                        address = str(ipaddress.ip_address(address))  # canonical form
                    except ValueError:
                        address = address.lower().rstrip(".")
                    if address in addresses:
                        problems.add(
                            _join(hpath, "address"),
                            f"address {address} is also used by host {addresses[address]!r}: "
                            "every host must be a different machine; fix one of them",
                        )
                    else:
                        addresses[address] = name
            settings = dict(ssh_defaults)
            if "ssh" in h:
                over = _mapping(h["ssh"], _join(hpath, "ssh"), problems, "{user: root}")
                if over is not None:
                    _check_keys(over, SSH_KEYS, _join(hpath, "ssh"), problems)
                    settings.update(
                        _ssh_fields(over, _join(hpath, "ssh"), base_dir, problems, check_files)
                    )
            macvlan = None
            if h.get("macvlan") is not None:
                macvlan = _macvlan(h["macvlan"], _join(hpath, "macvlan"), address, problems)
            rootless = None
            if h.get("rootless") is not None:
                rootless = _rootless(h["rootless"], _join(hpath, "rootless"), problems)
            if address is None or not all(k in settings for k in SSH_KEYS):
                continue  # already reported
            hosts[name] = Host(
                name=name, address=address, ssh=SshSettings(**settings), macvlan=macvlan,
                rootless=rootless,
            )
    _check_macvlan_overlaps(hosts, problems)
    if check_files:
        _check_host_key_lines(hosts, problems)

    # roles ------------------------------------------------------------------------------
    roles_raw = _require(data, "roles", "", problems, "{servers: [node1], dc_client: client1}")
    servers: list[str] = []
    listed: set[str] = set()  # the servers again, for a membership test in constant time
    dc_client = internet_client = None
    if roles_raw is not None:
        rmap = _mapping(roles_raw, "roles", problems, "{servers: [node1], dc_client: client1}")
        if rmap is not None:
            _check_keys(rmap, ROLE_KEYS, "roles", problems)
            srv = _require(rmap, "servers", "roles", problems, "[node1, node2, node3]")
            if srv is not None:
                if isinstance(srv, str):
                    srv = [srv]  # a single server written without brackets
                if not isinstance(srv, list):
                    problems.add(
                        "roles.servers",
                        f"must be a list of host names, got a {_type_name(srv)}: "
                        "e.g. `servers: [node1, node2]`",
                    )
                elif not srv:
                    problems.add(
                        "roles.servers",
                        "is empty: name at least one server (the first is the Swarm manager)",
                    )
                else:
                    for i, item in enumerate(srv):
                        n = _role_host(item, f"roles.servers[{i}]", host_names, problems)
                        if n is not None and n in listed:
                            problems.add(
                                f"roles.servers[{i}]",
                                f"server {n!r} is listed twice: list each server once",
                            )
                        elif n is not None:
                            servers.append(n)
                            listed.add(n)
            dc = _require(rmap, "dc_client", "roles", problems, "client1")
            if dc is not None:
                dc_client = _role_host(dc, "roles.dc_client", host_names, problems)
            if rmap.get("internet_client") is not None:
                internet_client = _role_host(
                    rmap["internet_client"], "roles.internet_client", host_names, problems
                )
    for role, n in (("dc_client", dc_client), ("internet_client", internet_client)):
        if n is not None and n in listed:
            problems.add(
                f"roles.{role}",
                f"host {n!r} is also a server: a server cannot be its own client (traffic "
                "would never cross the network); use a separate host",
            )
    if dc_client is not None and dc_client == internet_client:
        problems.add(
            "roles.internet_client",
            f"host {dc_client!r} is also the dc_client: the Internet client must reach the "
            "servers over a different (wide-area) path; use a separate host or drop the role",
        )

    # modes ------------------------------------------------------------------------------
    modes: tuple[str, ...] | None = None
    if data.get("modes") is not None:
        raw_modes = data["modes"]
        if not isinstance(raw_modes, list) or not raw_modes:
            problems.add(
                "modes",
                "must be a non-empty list of mode names, e.g. `modes: [native, docker-host]`; "
                "remove the key to run every mode",
            )
        else:
            good: list[str] = []
            for i, mode in enumerate(raw_modes):
                if not isinstance(mode, str) or mode not in known_modes:
                    problems.add(
                        f"modes[{i}]",
                        f"unknown mode {mode!r}: {_suggest(str(mode), known_modes)}",
                    )
                elif mode in good:
                    problems.add(f"modes[{i}]", f"mode {mode!r} is listed twice: list it once")
                else:
                    good.append(mode)
            modes = tuple(good)

    kubernetes = None
    if data.get("kubernetes") is not None:
        kubernetes = _kubernetes(data["kubernetes"], host_names, problems)
    if kubernetes is not None and kubernetes.host is not None:
        playing = {*servers, dc_client, internet_client}
        if kubernetes.host not in playing:
            problems.add(
                "kubernetes.host",
                f"host {kubernetes.host!r} plays no role: kubectl runs on a server or a client "
                "the study logs in to (name one under `roles`)",
            )

    if problems.items:
        raise InventoryError(source, problems.items, problems.kinds)
    assert environment is not None and dc_client is not None  # guaranteed by the checks
    return Inventory(
        environment=environment,
        lab=lab,
        hosts=hosts,
        servers=tuple(hosts[n] for n in servers),
        dc_client=hosts[dc_client],
        internet_client=hosts[internet_client] if internet_client else None,
        modes=modes,
        source=source.resolve(),
        kubernetes=kubernetes,
    )


def _check_host_key_lines(hosts: dict[str, Host], problems: _Problems) -> None:
    """A host its known_hosts file names only through a pattern: paramiko would not find its
    key and the connection would fail as "not in known_hosts". Each file is read once; a
    file's markers are reported where its path is checked."""
    files: dict[Path, KnownHosts] = {}
    for h in hosts.values():
        kh = h.ssh.known_hosts
        if kh not in files:
            files[kh] = KnownHosts.read(kh)
        if files[kh].unreadable:
            continue
        found = files[kh].problem(h.address, h.ssh.port)
        if found is not None:
            problems.add(f"hosts.{h.name}", f"{found[0]}: {found[1]}")


def _check_macvlan_overlaps(hosts: dict[str, Host], problems: _Problems) -> None:
    """Macvlan ranges of hosts on the same subnet must not overlap: each host's dockerd
    allocates from its own range without knowing the others, so overlap means duplicate IPs
    on one L2 segment. One sweep over the ranges sorted by their first address (n log n): a
    range that starts before the furthest end seen so far overlaps the range owning that end,
    and is reported once, naming that host."""
    by_subnet: dict[Any, list[tuple[int, int, int, str, Any]]] = {}
    for order, h in enumerate(hosts.values()):
        if h.macvlan is None:
            continue
        subnet = ipaddress.ip_network(h.macvlan.subnet)
        rng = ipaddress.ip_network(h.macvlan.ip_range)
        first, last = int(rng.network_address), int(rng.broadcast_address)
        by_subnet.setdefault(subnet, []).append((first, last, order, h.name, rng))
    found: list[tuple[int, str, str]] = []
    for ranges in by_subnet.values():
        ranges.sort()
        reach: tuple[int, str, Any] | None = None  # (last address, host, range) reaching furthest
        for first, last, order, name, rng in ranges:
            if reach is not None and first <= reach[0]:
                found.append((order, name, f"ip_range {rng} overlaps host {reach[1]!r}'s "
                              f"{reach[2]}: containers on the two hosts would get the same "
                              "addresses; give each host its own range"))  # fmt: skip
            if reach is None or last > reach[0]:
                reach = (last, name, rng)
    for _, name, message in sorted(found, key=lambda f: f[0]):
        problems.add(f"hosts.{name}.macvlan.ip_range", message)


def main(argv: list[str] | None = None) -> int:
    """``check FILE...``: print every problem of each inventory, one a line; exit 2 if any.
    ``check --connect FILE...``: also connect to every host (pipeline/collect/preflight.py)."""
    args = sys.argv[1:] if argv is None else argv
    connect = "--connect" in args[1:2]
    if connect:
        args = [args[0], *args[2:]]
    if len(args) < 2 or args[0] != "check":
        print("usage: python -m pipeline.inventory check [--connect] FILE [FILE...]",
              file=sys.stderr)  # fmt: skip
        return 2
    if connect:
        from pipeline.benchmarks import BENCHMARKS
        from pipeline.collect import preflight

        return preflight.main(args[1:], BENCHMARKS)
    from pipeline.collect.modes import MODES

    status = 0
    for name in args[1:]:
        try:
            inv = load(name, MODES)
        except InventoryError as e:
            print(e, file=sys.stderr)
            status = 2
        else:
            print(f"{name}: valid ({inv.environment}: {len(inv.all_hosts())} hosts with roles)")
    return status


if __name__ == "__main__":
    sys.exit(main())
