"""Settings files as untrusted input: the one reader of params.yaml, the profiles and the
inventories.

DVC reads params.yaml and the profiles with ruamel.yaml (``YAML(typ="safe")``: the YAML 1.2
core schema, duplicate keys an error), so this reader uses the same parser and the same
schema: ``runs: 010`` is 10 and ``0o10`` is 8 (YAML 1.1 would read 8 and a string), ``yes``,
``no``, ``on`` and ``off`` are text, not booleans. On top of what DVC does:

- a key given twice is named with both of its lines (DVC refuses the file without saying
  where; other readers keep one of the two silently);
- aliases are refused (nested aliases let a few hundred bytes expand without bound, and a
  merge key needs one), and the file is bounded in size and nesting depth;
- the file must be a regular file that stays inside its root (the repository) once symbolic
  links are followed: a link pointing out, a device or a FIFO is refused before it is opened;
- a value that looks like a secret (a private key, a password hash, an API token) is replaced
  by a placeholder before any check sees it, and named by its key path, never printed, so it
  cannot reach a log or an executed notebook (a DVC output);
- the line of every key is kept (``Document.line``), so a message about an unknown key names
  the key and its line and never quotes the value.

Pure: no pipeline imports, so every reader of a settings file can use it.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.composer import Composer, ComposerError
from ruamel.yaml.error import YAMLError
from ruamel.yaml.events import AliasEvent
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

__all__ = [
    "MAX_BYTES",
    "MAX_DEPTH",
    "Document",
    "Redacted",
    "SettingsFileError",
    "bounded",
    "key_text",
    "parse",
    "read",
    "redact",
    "secret_kind",
    "yaml_problem",
]

MAX_BYTES = 1 << 20
# A settings file is a few levels deep; the bound keeps a hostile file from exhausting the stack.
MAX_DEPTH = 64
# How many problems of one kind a report shows before it counts the rest.
PER_KIND = 20


# --------------------------------------------------------------------------------------------
# secrets

_OPENSSH_PUBLIC = re.compile(
    r"(ssh-(rsa|dss|ed25519)|ecdsa-sha2-nistp\d+|sk-[a-z0-9@.-]+)\s+AAAA[A-Za-z0-9+/]"
)
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{40,}={0,2}")
# crypt(3) and its relatives as /etc/shadow, htpasswd and application databases hold them:
# $id$[params$]salt$hash with the ids of md5-crypt, bcrypt, sha256/512-crypt, scrypt,
# yescrypt, gost-yescrypt, sm3, argon2, phpass, pbkdf2 (passlib), Apache's apr1.
_CRYPT_HASH = re.compile(
    r"\$(1|2[abxy]?|5|6|7|y|gy|sm3|md5|sha1|apr1|P|H|argon2(?:id|i|d)|scrypt|"
    r"pbkdf2(?:-sha\d+)?|bcrypt(?:-sha256)?)\$[A-Za-z0-9./+=,$-]{8,}"
)
# Django's and Werkzeug's hash formats (no leading '$'), LDAP's {SSHA}-style hashes
_APP_HASH = re.compile(
    r"\b(pbkdf2_sha\d+\$\d+\$|argon2\$argon2|bcrypt_sha256\$|scrypt:\d+:\d+:\d+\$|"
    r"pbkdf2:sha\d+:\d+\$)|\{(S?SHA\d*|S?MD5|CRYPT|PBKDF2[-\w]*|ARGON2)\}\S{8,}",
    re.IGNORECASE,
)
_TOKENS = (
    ("a GitHub token", re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})")),
    ("a GitLab token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}")),
    ("a Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("an AWS access key id", re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("a Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    ("an API token", re.compile(r"\b(sk|pk|rk)-(live|test|proj|ant)?[-_]?[A-Za-z0-9_-]{20,}")),
    ("a package registry token", re.compile(r"\b(pypi-AgE|npm_|hf_)[A-Za-z0-9_-]{20,}")),
    ("a JSON web token", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.")),
    ("a URL with a password", re.compile(r"[a-z][a-z0-9+.-]*://[^/\s:@]+:[^/\s@]+@")),
)


def secret_kind(text: str) -> str | None:
    """What ``text`` looks like if it may be a secret, else None. The description never quotes
    the text."""
    if "-----BEGIN" in text or "PRIVATE KEY" in text:
        return "a private key or certificate (a PEM block)"
    if _OPENSSH_PUBLIC.search(text):
        return "an OpenSSH public key line"
    if _CRYPT_HASH.search(text) or _APP_HASH.search(text):
        return "a password hash"
    for kind, pattern in _TOKENS:
        if pattern.search(text):
            return kind
    for run in _BASE64_RUN.finditer(text):
        s = run.group()
        mixed = any(c.isupper() for c in s) and any(c.islower() for c in s)
        if mixed and any(c.isdigit() for c in s) and s.count("/") <= len(s) // 8:
            return "a long base64 blob (a key or token)"
    return None


class Redacted(str):
    """Stands in for a value that looked like a secret: its text is only the description."""


def redact(data: Any, path: str = "") -> tuple[Any, list[tuple[str, str]]]:
    """``data`` with every secret-looking string (value or mapping key) replaced by a
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


_NAME_LIKE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@-]{0,39}")


def key_text(key: Any) -> str:
    """A mapping key as a message may show it: quoted when it looks like a name, otherwise only
    its length (a pasted line may be a secret the detector does not know)."""
    if isinstance(key, str) and _NAME_LIKE.fullmatch(key) and not secret_kind(key):
        return repr(key)
    if isinstance(key, int | float) and not isinstance(key, bool):
        return repr(key)
    return f"(a key of {len(str(key))} characters, not shown)"


# --------------------------------------------------------------------------------------------
# parsing


class SettingsFileError(ValueError):
    """A settings file that cannot be read at all; ``problem`` is one line (without the file
    name) saying why and what to do."""

    def __init__(self, path: Path | str, problem: str):
        self.path = Path(path)
        self.problem = problem
        super().__init__(f"{path}: {problem}")


@dataclass(frozen=True)
class Document:
    """A settings file as read: its data (secrets replaced by placeholders), the line of every
    key, and the problems found while reading that do not stop the checks."""

    data: Any
    lines: dict[str, int] = field(default_factory=dict)
    # (key path, message): keys given twice
    duplicates: list[tuple[str, str]] = field(default_factory=list)
    # (key path, what it looks like): values and keys replaced by placeholders
    secrets: list[tuple[str, str]] = field(default_factory=list)

    def line(self, path: str) -> int | None:
        """The line (1-based) of the key at ``path`` ("hosts.node1.ssh", "leaves_out[0]")."""
        return self.lines.get(path)


class _NoAliasComposer(Composer):
    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.parser.check_event(AliasEvent):
            event = self.parser.peek_event()
            raise ComposerError(
                None, None, "aliases (*name) are not allowed here: write the value out",
                event.start_mark,
            )  # fmt: skip
        return super().compose_node(parent, index)


def yaml_problem(exc: BaseException, at: str = " at line {line}, column {column}") -> str:
    """One line for a YAML error (never quoting a value that may be a secret)."""
    if isinstance(exc, RecursionError) or "maximum depth" in str(getattr(exc, "problem", "")):
        return "nested too deeply to be a settings file: flatten it"
    mark = getattr(exc, "problem_mark", None)
    where = at.format(line=mark.line + 1, column=mark.column + 1) if mark else ""
    what = getattr(exc, "problem", None) or (str(exc).splitlines() or ["unreadable"])[0]
    if secret_kind(what):
        what = "the parser's message is not shown (it quotes text that looks like a key)"
    return f"not valid YAML{where}: {what}"


def _join(path: str, key: object) -> str:
    return f"{path}.{key}" if path else str(key)


def _walk(node: Node, path: str, lines: dict[str, int], dups: list[tuple[str, str]]) -> None:
    """Record each key's line and every key given twice. Iterative: the depth is bounded by
    the composer already, but a wide file should not cost a frame per entry."""
    todo: list[tuple[Node, str]] = [(node, path)]
    while todo:
        node, path = todo.pop()
        if isinstance(node, MappingNode):
            seen: dict[tuple[str, str], int] = {}
            for key_node, value_node in node.value:
                scalar = isinstance(key_node, ScalarNode)
                key = str(key_node.value) if scalar else "?"
                line = key_node.start_mark.line + 1
                where = _join(path, key)
                lines.setdefault(where, line)
                if scalar and not secret_kind(key):  # a secret key is named by the secret check
                    ident = (key_node.tag, key)
                    if ident in seen:
                        dups.append((where, f"key {key_text(key)} is given twice (lines "
                                     f"{seen[ident]} and {line}); DVC refuses such a file and "
                                     "other readers keep one of the two silently: remove or "
                                     "rename one"))  # fmt: skip
                    else:
                        seen[ident] = line
                todo.append((value_node, where))
        elif isinstance(node, SequenceNode):
            for i, item in enumerate(node.value):
                lines.setdefault(f"{path}[{i}]", item.start_mark.line + 1)
                todo.append((item, f"{path}[{i}]"))


def parse(text: str, *, source: str = "the file") -> Document:
    """The document in ``text`` read as DVC reads it (YAML 1.2 core schema), with the lines of
    its keys, its duplicate keys and its secrets; a file that is not YAML at all raises
    :class:`SettingsFileError` (``source`` names it)."""
    yaml = YAML(typ="safe")
    yaml.Composer = _NoAliasComposer
    yaml.allow_duplicate_keys = True  # reported with both lines below, not by the constructor
    yaml.max_depth = MAX_DEPTH
    try:
        node = yaml.compose(text)
        data = yaml.constructor.construct_document(node) if node is not None else None
    except (YAMLError, RecursionError) as exc:
        raise SettingsFileError(source, yaml_problem(exc)) from None
    except (ValueError, TypeError, OverflowError) as exc:
        # a constructor refusing a scalar (a date like 2024-13-45): name the kind, not the text
        raise SettingsFileError(source, f"not valid YAML: a value cannot be read "
                                        f"({type(exc).__name__})") from None  # fmt: skip
    lines: dict[str, int] = {}
    dups: list[tuple[str, str]] = []
    if node is not None:
        _walk(node, "", lines, dups)
    data, secrets = redact(data)
    return Document(data=data, lines=lines, duplicates=dups, secrets=secrets)


# --------------------------------------------------------------------------------------------
# reading a file


def _owned(st: os.stat_result) -> bool:
    return st.st_uid == os.getuid()


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def read(
    path: str | Path, *, root: str | Path | None = None, what: str = "a settings file",
    missing_fix: str = "check the path",
) -> Document:  # fmt: skip
    """Read the settings file at ``path``; :class:`SettingsFileError` when it cannot be read
    (missing, a directory, a device or FIFO, a symbolic link leading outside ``root``, over
    :data:`MAX_BYTES`, unreadable, not UTF-8, not YAML). ``root`` defaults to the file's own
    directory (a link may not lead out of it); ``what`` names the file's kind in messages."""
    path = Path(path)
    where = Path(os.path.abspath(path))
    root_dir = Path(os.path.abspath(root)) if root is not None else where.parent
    try:
        link = os.lstat(where)
    except FileNotFoundError:
        raise SettingsFileError(path, f"file not found: {missing_fix}") from None
    except OSError as exc:
        raise SettingsFileError(path, f"cannot read the file ({exc.strerror}): check the "
                                      "path") from None  # fmt: skip
    real = Path(os.path.realpath(where))
    if stat.S_ISLNK(link.st_mode) or real != where:
        if not real.exists():
            raise SettingsFileError(path, f"is a symbolic link to {real}, which does not exist: "
                                          f"{missing_fix}")  # fmt: skip
        if not _inside(real, Path(os.path.realpath(root_dir))):
            raise SettingsFileError(
                path, f"is a symbolic link to {real}, outside {root_dir}: {what} is read only "
                "from a regular file inside the repository; copy the content you mean into "
                f"{path} instead of linking to another file",
            )  # fmt: skip
    try:
        st = os.stat(real)
    except OSError as exc:
        raise SettingsFileError(path, f"cannot read the file ({exc.strerror}): check the "
                                      "path") from None  # fmt: skip
    if stat.S_ISDIR(st.st_mode):
        raise SettingsFileError(path, f"is a directory, not {what}: name a .yaml file")
    if not stat.S_ISREG(st.st_mode):
        kind = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a socket" if stat.S_ISSOCK(
            st.st_mode) else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(
            st.st_mode) else "not a regular file")  # fmt: skip
        raise SettingsFileError(path, f"is {kind}, not {what}: name a regular .yaml file")
    if st.st_size > MAX_BYTES:
        raise SettingsFileError(path, f"is over {MAX_BYTES} bytes, not {what}: name the right "
                                      "file")  # fmt: skip
    try:
        # O_NONBLOCK: a file swapped for a FIFO after the check must not hang the read
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except PermissionError:
        fix = f"chmod u+r {real}" if _owned(st) else "copy it to a file you own"
        raise SettingsFileError(path, f"cannot read the file (permission denied): {fix}") \
            from None
    except OSError as exc:
        raise SettingsFileError(path, f"cannot read the file ({exc.strerror}): check the "
                                      "path") from None  # fmt: skip
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise SettingsFileError(path, f"is not a regular file, not {what}: name a .yaml "
                                          "file")  # fmt: skip
        raw = f.read(MAX_BYTES + 1)
    if len(raw) > MAX_BYTES:
        raise SettingsFileError(path, f"is over {MAX_BYTES} bytes, not {what}: name the right "
                                      "file")  # fmt: skip
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SettingsFileError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start}): "
                                      "save it as UTF-8") from None  # fmt: skip
    return parse(text, source=str(path))


# --------------------------------------------------------------------------------------------
# reporting

_VARYING = re.compile(r"'[^']*'|\"[^\"]*\"|\S*\d\S*|/\S+")


def problem_kind(problem: str) -> str:
    """A problem line with what varies from one instance to the next (names, numbers,
    addresses, paths) blanked out: two problems of one kind give the same text."""
    return _VARYING.sub("_", problem.split(": ", 1)[-1])


def bounded(
    problems: Iterable[str], per_kind: int = PER_KIND,
    kind: Callable[[str], str] = problem_kind,
) -> list[str]:  # fmt: skip
    """The problems to print: the first ``per_kind`` of each kind in their order, and after the
    last one shown of a kind that has more, "... and N more of this kind"."""
    problems = list(problems)
    kinds = [kind(p) for p in problems]
    total: dict[str, int] = {}
    for k in kinds:
        total[k] = total.get(k, 0) + 1
    shown: dict[str, int] = {}
    out: list[str] = []
    for p, k in zip(problems, kinds, strict=True):
        shown[k] = shown.get(k, 0) + 1
        if shown[k] <= per_kind:
            out.append(p)
        if shown[k] == per_kind and total[k] > per_kind:
            out.append(f"... and {total[k] - per_kind} more of this kind")
    return out
