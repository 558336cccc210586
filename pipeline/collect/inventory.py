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
- YAML aliases are refused and the file is bounded in size and nesting depth.

    python -m pipeline.inventory check FILE   # every problem, one a line; exit 2
"""

from __future__ import annotations

import base64
import binascii
import difflib
import ipaddress
import os
import re
import stat
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

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

    def __init__(self, source: Path | str, problems: list[str]):
        self.source = Path(source)
        self.problems = list(problems)
        n = len(self.problems)
        head = f"invalid inventory {self.source}: {n} problem{'s' if n != 1 else ''}"
        super().__init__("\n".join([head, *(f"  - {p}" for p in self.problems)]))


# --------------------------------------------------------------------------------------------
# Settings files as untrusted input (params.yaml and the profiles are read the same way):
# YAML without aliases (nested aliases let a few hundred bytes expand without bound, a
# recursive one never finishes), bounded in size and depth; a value that looks like key
# material is replaced by a placeholder before any check sees it, and named by its key path,
# never printed, so it cannot reach a log or an executed notebook (a DVC output).

MAX_YAML_BYTES = 1 << 20

_OPENSSH_PUBLIC = re.compile(
    r"(ssh-(rsa|dss|ed25519)|ecdsa-sha2-nistp\d+|sk-[a-z0-9@.-]+)\s+AAAA[A-Za-z0-9+/]"
)
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{40,}={0,2}")


class NoAliasLoader(yaml.SafeLoader):
    """Safe YAML that refuses aliases (and so merge keys, which need one)."""

    def compose_node(self, parent, index):  # type: ignore[override]
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None, None, "aliases (*name) are not allowed here: write the value out",
                event.start_mark,
            )  # fmt: skip
        return super().compose_node(parent, index)


def yaml_problem(exc: BaseException, at: str = " at line {line}, column {column}") -> str:
    """One line for a YAML error (never quoting a value that may be a secret)."""
    if isinstance(exc, RecursionError):
        return "nested too deeply to be a settings file: flatten it"
    mark = getattr(exc, "problem_mark", None)
    where = at.format(line=mark.line + 1, column=mark.column + 1) if mark else ""
    what = getattr(exc, "problem", None) or (str(exc).splitlines() or ["unreadable"])[0]
    if secret_kind(what):
        what = "the parser's message is not shown (it quotes text that looks like a key)"
    return f"not valid YAML{where}: {what}"


def load_yaml(text: str) -> tuple[Any, yaml.Node | None]:
    """The document and its node tree (for line numbers); raises yaml.YAMLError or
    RecursionError, both turned into one line by :func:`yaml_problem`."""
    node = yaml.compose(text, Loader=NoAliasLoader)  # noqa: S506 (a safe loader)
    data = yaml.load(text, Loader=NoAliasLoader)  # noqa: S506 (a safe loader)
    return data, node


def secret_kind(text: str) -> str | None:
    """What ``text`` looks like if it may be key material, else None. The description never
    quotes the text."""
    if "-----BEGIN" in text or "PRIVATE KEY" in text:
        return "a private key or certificate (a PEM block)"
    if _OPENSSH_PUBLIC.search(text):
        return "an OpenSSH public key line"
    for run in _BASE64_RUN.finditer(text):
        s = run.group()
        mixed = any(c.isupper() for c in s) and any(c.islower() for c in s)
        if mixed and any(c.isdigit() for c in s) and s.count("/") <= len(s) // 8:
            return "a long base64 blob (a key or token)"
    return None


class Redacted(str):
    """Stands in for a value that looked like a secret: its text is only the description."""


def redact(data: Any, path: str = "") -> tuple[Any, list[tuple[str, str]]]:
    """``data`` with every key-looking string (value or mapping key) replaced by a
    :class:`Redacted` placeholder, and the (key path, what it looks like) of each."""
    found: list[tuple[str, str]] = []

    def walk(value: Any, where: str) -> Any:
        if isinstance(value, str):
            kind = secret_kind(value)
            if kind:
                found.append((where, kind))
                return Redacted(f"<not shown: {kind}>")
            return value
        if isinstance(value, dict):
            out = {}
            for k, v in value.items():
                if isinstance(k, str) and (kind := secret_kind(k)):
                    k = Redacted(f"<not shown: {kind}>")
                    found.append((f"{where}.{k}" if where else k, kind))
                out[k] = walk(v, f"{where}.{k}" if where else str(k))
            return out
        if isinstance(value, list):
            return [walk(v, f"{where}[{i}]") for i, v in enumerate(value)]
        return value

    return walk(data, path), found


# --------------------------------------------------------------------------------------------
# YAML reading


class _Problems:
    """Collects problems as "<file>: <key path>: <what is wrong>; <fix>" lines."""

    def __init__(self, source: Path):
        self.source = source
        self.items: list[str] = []
        self.secret_paths: set[str] = set()

    def add(self, path: str, message: str, *, about_value: bool = True) -> None:
        if about_value and path in self.secret_paths:
            return  # already named as a secret; a message about its value would only repeat it
        where = f"{self.source}: {path}" if path else str(self.source)
        self.items.append(f"{where}: {message}")


def _find_duplicate_keys(node: yaml.Node, path: str, problems: _Problems) -> None:
    """Walk the composed YAML tree and report mapping keys given twice.

    ``yaml.safe_load`` silently keeps the last of two equal keys, so a host pasted twice
    would quietly replace the first; the node tree still has both, with line numbers.
    """
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else "?"
            line = key_node.start_mark.line + 1
            if secret_kind(key):
                continue  # named (never printed) by the secret check
            if isinstance(key_node, yaml.ScalarNode) and key != "<<":
                if key in seen:
                    problems.add(
                        _join(path, key),
                        f"key {key!r} is given twice (lines {seen[key]} and {line}); "
                        "YAML would silently keep only the last one: remove or rename one",
                    )
                else:
                    seen[key] = line
            _find_duplicate_keys(value_node, _join(path, key), problems)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _find_duplicate_keys(item, f"{path}[{i}]", problems)


def _read_yaml(path: Path, problems: _Problems) -> Any:
    if not path.exists():
        problems.add(
            "",
            "file not found: check the path (e.g. in params.yaml) or create it from "
            "inventory/example-hosts.yaml",
        )
        return None
    if path.is_dir():
        problems.add("", "is a directory, not an inventory file: name a .yaml file")
        return None
    try:
        if path.stat().st_size > MAX_YAML_BYTES:
            problems.add("", f"is over {MAX_YAML_BYTES} bytes, not an inventory: name the "
                         "right file (an inventory is a few dozen lines)")
            return None
        text = path.read_text(encoding="utf-8")
    except PermissionError:
        problems.add("", f"cannot read the file (permission denied): chmod u+r {path}")
        return None
    except UnicodeDecodeError as e:
        problems.add("", f"not UTF-8 text ({e.reason} at byte {e.start}): save it as UTF-8")
        return None
    except OSError as e:
        problems.add("", f"cannot read the file ({e.strerror}): check the path")
        return None
    try:
        data, node = load_yaml(text)
    except (yaml.YAMLError, RecursionError) as e:
        problems.add("", f"{yaml_problem(e)}; fix the syntax (indentation, quotes, colons)")
        return None
    data, secrets = redact(data)
    for where, kind in secrets:
        what = "key material, not a path" if where.endswith("key_file") else "key material"
        problems.add(
            where,
            f"looks like {what} ({kind}); the value is not shown. Key material never belongs in an "
            "inventory: remove it, keep the private key in a file (chmod 600) and give that "
            "file's path as ssh.key_file",
        )
        problems.secret_paths.add(where)
    if node is not None:
        _find_duplicate_keys(node, "", problems)
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


def _suggest(word: str, choices: Iterable[str]) -> str:
    choices = list(choices)
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    if close:
        return f"did you mean {close[0]!r}?"
    return "allowed: " + ", ".join(choices)


def _check_keys(
    mapping: dict, allowed: Iterable[str], path: str, problems: _Problems
) -> None:
    allowed = tuple(allowed)
    for key in mapping:
        if key not in allowed:
            # Only the key *name* is echoed, never its value (it might be pasted secrets).
            problems.add(
                _join(path, key),
                f"unknown key {str(key)!r}: {_suggest(str(key), allowed)}",
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
                _check_key_file(p, kpath, problems)
            else:
                _check_known_hosts(p, kpath, problems)
    return out


def _check_key_file(p: Path, kpath: str, problems: _Problems) -> None:
    if p.suffix == ".pub":
        problems.add(
            kpath,
            f"{p} is a public key: name the private key ({p.with_suffix('')})",
        )
        return
    try:
        st = p.stat()
    except FileNotFoundError:
        problems.add(
            kpath,
            f"private key {p} does not exist: create one with `ssh-keygen -t ed25519 -f {p}` "
            "and authorize its .pub on the hosts, or fix the path "
            "(for the lab: `python -m pipeline.lab up`)",
        )
        return
    except OSError as e:
        problems.add(kpath, f"cannot stat private key {p} ({e.strerror}): fix the path")
        return
    if not stat.S_ISREG(st.st_mode):
        problems.add(kpath, f"{p} is not a regular file: name the private key file")
        return
    if not os.access(p, os.R_OK):
        problems.add(kpath, f"private key {p} is not readable by this user: chmod 600 {p} "
                     "and make sure you own it")
    else:
        encrypted = key_encryption(p)
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
        problems.add(
            kpath,
            f"private key {p} is accessible by group/others (mode {mode:04o}); ssh refuses "
            f"such keys: chmod 600 {p}",
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


def _check_known_hosts(p: Path, kpath: str, problems: _Problems) -> None:
    if not p.exists():
        problems.add(
            kpath,
            f"known_hosts file {p} does not exist: add the hosts' keys after verifying them "
            f"out of band, e.g. `ssh-keyscan -p PORT ADDRESS >> {p}` "
            "(for the lab: `python -m pipeline.lab up`)",
        )
    elif not p.is_file():
        problems.add(kpath, f"{p} is not a regular file: name the known_hosts file")
    elif not os.access(p, os.R_OK):
        problems.add(kpath, f"known_hosts file {p} is not readable: chmod u+r {p}")


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
        raise InventoryError(source, problems.items)
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

    # roles ------------------------------------------------------------------------------
    roles_raw = _require(data, "roles", "", problems, "{servers: [node1], dc_client: client1}")
    servers: list[str] = []
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
                        if n is not None and n in servers:
                            problems.add(
                                f"roles.servers[{i}]",
                                f"server {n!r} is listed twice: list each server once",
                            )
                        elif n is not None:
                            servers.append(n)
            dc = _require(rmap, "dc_client", "roles", problems, "client1")
            if dc is not None:
                dc_client = _role_host(dc, "roles.dc_client", host_names, problems)
            if rmap.get("internet_client") is not None:
                internet_client = _role_host(
                    rmap["internet_client"], "roles.internet_client", host_names, problems
                )
    for role, n in (("dc_client", dc_client), ("internet_client", internet_client)):
        if n is not None and n in servers:
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
        raise InventoryError(source, problems.items)
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


def _check_macvlan_overlaps(hosts: dict[str, Host], problems: _Problems) -> None:
    """Macvlan ranges of hosts on the same subnet must not overlap: each host's dockerd
    allocates from its own range without knowing the others, so overlap means duplicate IPs
    on one L2 segment."""
    seen: list[tuple[str, Any, Any]] = []
    for h in hosts.values():
        if h.macvlan is None:
            continue
        subnet = ipaddress.ip_network(h.macvlan.subnet)
        rng = ipaddress.ip_network(h.macvlan.ip_range)
        for other, osub, orng in seen:
            if osub == subnet and rng.overlaps(orng):
                problems.add(
                    f"hosts.{h.name}.macvlan.ip_range",
                    f"ip_range {rng} overlaps host {other!r}'s {orng}: containers on the two "
                    "hosts would get the same addresses; give each host its own range",
                )
        seen.append((h.name, subnet, rng))


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
