"""requirements/lock.txt: what it pins for this interpreter, how that compares with what is
installed, and environment.yml, which conda users install it through.

The lock is written by `make lock` (uv pip compile --universal --generate-hashes): one pin per
package, with an environment marker where a package or a version applies only to some
platforms or Pythons. `make setup` installs it with `pip install --require-hashes --no-deps`,
then removes what is installed but not locked (`extra`) and checks the result (`check`).

    python tools/lockfile.py check         # exit 1, listing each difference, if the installed
                                           # set is not exactly the lock's
    python tools/lockfile.py extra         # installed distributions the lock does not name
    python tools/lockfile.py environment   # write environment.yml (from pyproject.toml)
"""

from __future__ import annotations

import re
import sys
import tomllib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements" / "lock.txt"
ENVIRONMENT_YML = ROOT / "environment.yml"
# The project itself is installed editable from the work tree, not from the lock.
PROJECT = "container-overhead"
PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[^\s;\\]+)"
                 r"\s*(?:;\s*(?P<marker>[^\\]+?))?\s*\\?$")  # fmt: skip
HASH = re.compile(r"^\s+--hash=sha256:[0-9a-f]{64}")


def canonical(name: str) -> str:
    """A distribution name as PEP 503 compares them (``PyYAML`` and ``pyyaml`` are one)."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Pin:
    name: str
    version: str
    marker: str | None
    hashes: int

    def applies(self, environment: dict[str, str] | None = None) -> bool:
        """Whether pip installs this pin in ``environment`` (default: this interpreter)."""
        if self.marker is None:
            return True
        from packaging.markers import Marker

        return Marker(self.marker).evaluate(environment)


def read_lock(path: Path = LOCK) -> list[Pin]:
    """Every pin of the lock, in file order, with the number of hashes that follow it."""
    pins: list[Pin] = []
    for line in path.read_text().splitlines():
        match = PIN.match(line)
        if match:
            pins.append(Pin(canonical(match["name"]), match["version"], match["marker"], 0))
        elif HASH.match(line) and pins:
            last = pins[-1]
            pins[-1] = Pin(last.name, last.version, last.marker, last.hashes + 1)
    return pins


def wanted(pins: list[Pin], environment: dict[str, str] | None = None) -> dict[str, str]:
    """name -> version for the pins that apply here; two pins of one name that both apply
    would leave pip to choose, so that is an error."""
    chosen: dict[str, str] = {}
    for pin in pins:
        if not pin.applies(environment):
            continue
        if pin.name in chosen and chosen[pin.name] != pin.version:
            raise ValueError(f"the lock pins {pin.name} twice here: {chosen[pin.name]}, "
                             f"{pin.version}")  # fmt: skip
        chosen[pin.name] = pin.version
    return chosen


def installed() -> dict[str, str]:
    """name -> version of every distribution this interpreter sees, the project excepted."""
    found: dict[str, str] = {}
    for dist in metadata.distributions():
        name = canonical(dist.metadata["Name"] or "")
        # sys.path order: the first one found is the one imported, as importlib.metadata.version
        if name and name != PROJECT and name not in found:
            found[name] = dist.version
    return found


def differences(lock: dict[str, str], have: dict[str, str]) -> list[str]:
    """One line per package whose installed state is not the lock's."""
    lines = []
    for name in sorted(lock.keys() | have.keys()):
        if name not in have:
            lines.append(f"{name}: locked {lock[name]}, not installed")
        elif name not in lock:
            lines.append(f"{name}: installed {have[name]}, not in the lock")
        elif lock[name] != have[name]:
            lines.append(f"{name}: locked {lock[name]}, installed {have[name]}")
    return lines


def environment_yml(pyproject: Path = ROOT / "pyproject.toml") -> str:
    """environment.yml's text: conda supplies Python (the oldest requires-python allows, the
    one the lock is resolved for) and pip, and pip installs the lock, hashes checked."""
    project = tomllib.loads(pyproject.read_text())["project"]
    python = re.fullmatch(r">=\s*(\d+\.\d+)", project["requires-python"].strip())
    if python is None:
        raise ValueError(f"requires-python {project['requires-python']!r} is not '>=X.Y'")
    return f"""\
# Generated from pyproject.toml by `python tools/lockfile.py environment` (`make lock` runs it):
# tests/unit/test_environment.py checks that it is current. For conda users:
#   conda env create -f environment.yml && conda activate {project['name']}
#   pip install --no-deps -e .
# pip installs requirements/lock.txt, the same pinned and hashed set as `make setup`'s .venv.
name: {project['name']}
channels:
  - conda-forge
dependencies:
  - python={python[1]}
  - pip
  - pip:
      - -r {LOCK.relative_to(ROOT).as_posix()}
"""


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["check"]:
        problems = differences(wanted(read_lock()), installed())
        for line in problems:
            print(line, file=sys.stderr)
        if problems:
            print(f"{len(problems)} difference(s) from {LOCK.relative_to(ROOT)}: run `make setup`",
                  file=sys.stderr)  # fmt: skip
            return 1
        print(f"installed set = {LOCK.relative_to(ROOT)} ({len(wanted(read_lock()))} packages)")
        return 0
    if args == ["extra"]:
        print(" ".join(sorted(installed().keys() - wanted(read_lock()).keys())))
        return 0
    if args == ["environment"]:
        ENVIRONMENT_YML.write_text(environment_yml())
        print(f"wrote {ENVIRONMENT_YML.relative_to(ROOT)}")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
