"""The package's import graph, read statically (no module is executed): which `pipeline` modules
a module imports, directly and through others. The layering test and the stage generator use it:
the test keeps analysis away from collection and the lab, the generator derives each stage's
code dependencies from what its notebook imports."""

from __future__ import annotations

import ast
import json
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def module_file(module: str) -> Path | None:
    """The source file of a ``pipeline`` (or other repository) module, or None if not ours."""
    base = ROOT.joinpath(*module.split("."))
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return None


def _imports_in(source: str, module: str, is_package: bool) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                parts = module.split(".")
                keep = len(parts) - node.level + (1 if is_package else 0)
                base = ".".join(parts[:keep] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            found.add(base)
            # `from pipeline.analysis import stats` imports the submodule pipeline.analysis.stats
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


@cache
def direct(module: str) -> frozenset[str]:
    """The repository modules ``module`` imports itself (packages of submodules included, since
    importing ``a.b.c`` runs ``a/__init__`` and ``a/b/__init__``)."""
    path = module_file(module)
    if path is None:
        return frozenset()
    named = _imports_in(path.read_text(), module, path.name == "__init__.py")
    ours: set[str] = set()
    for name in named:
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            candidate = ".".join(parts[:i])
            if module_file(candidate) is not None and candidate != module:
                ours.add(candidate)
    return frozenset(ours)


def _is_package(module: str) -> bool:
    path = module_file(module)
    return path is not None and path.name == "__init__.py"


def closure(modules: list[str] | set[str]) -> set[str]:
    """Every repository module the given modules import, directly or not (themselves included)."""
    seen: set[str] = set()
    todo = list(modules)
    while todo:
        module = todo.pop()
        if module in seen or module_file(module) is None:
            continue
        seen.add(module)
        parts = module.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))  # parent packages
        todo.extend(direct(module))
    return seen


def notebook_imports(notebook: Path) -> set[str]:
    """The repository modules a notebook's code cells import."""
    cells = json.loads(Path(notebook).read_text())["cells"]
    found: set[str] = set()
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        magic = ("%", "!")  # IPython lines are not Python
        source = "\n".join(s for s in source.splitlines() if not s.lstrip().startswith(magic))
        for name in _imports_in(source, "__notebook__", False):
            parts = name.split(".")
            for i in range(1, len(parts) + 1):
                candidate = ".".join(parts[:i])
                if module_file(candidate) is not None:
                    found.add(candidate)
    return found


def files(modules: set[str]) -> list[str]:
    """The modules' source files, relative to the repository, sorted."""
    return sorted(str(module_file(m).relative_to(ROOT)) for m in modules if module_file(m))


# Who may import whom: a module under the first prefix must not reach (directly or through any
# other module) a module under the second. Collection runs on any inventory and never needs the
# lab; analysis reads data only, so it must not pull in SSH, the modes or the lab; a benchmark
# is declarations, command lines and parsers, so analysis can read it without collection.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("pipeline.analysis", ("pipeline.collect", "pipeline.lab", "pipeline.environments")),
    ("pipeline.benchmarks", ("pipeline.collect", "pipeline.lab", "pipeline.environments")),
    ("pipeline.collect", ("pipeline.lab", "pipeline.environments")),
    ("pipeline.hosts", ("pipeline.collect", "pipeline.lab", "pipeline.benchmarks")),
    ("pipeline.kube_objects", ("pipeline.collect", "pipeline.lab", "pipeline.benchmarks")),
]
# Third-party packages analysis must never load (it runs where no host is reachable).
ANALYSIS_FORBIDDEN_THIRD_PARTY = ("paramiko", "docker")


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def package_modules() -> list[str]:
    """Every module of the ``pipeline`` package, by dotted name."""
    found = []
    for path in sorted((ROOT / "pipeline").rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found.append(".".join(parts))
    return found


def layer_violations(modules: list[str], reach=None) -> list[str]:
    """One line per forbidden import path, naming the module, what it reaches and through which
    direct import. ``reach(module)`` gives what a module imports directly (default: the source)."""
    reach = reach or direct
    problems = []
    for module in modules:
        for prefix, banned in LAYERS:
            if not _under(module, prefix):
                continue
            for first in sorted(reach(module)):
                seen, todo = set(), [first]
                while todo:
                    m = todo.pop()
                    if m in seen:
                        continue
                    seen.add(m)
                    hit = next((b for b in banned if _under(m, b)), None)
                    if hit:
                        problems.append(f"{module} imports {first}, which reaches {m} ({hit} "
                                        f"is off limits for {prefix})")
                        break
                    todo.extend(reach(m))
    return sorted(set(problems))


def third_party(module: str) -> set[str]:
    """The top-level third-party packages a repository module imports itself."""
    path = module_file(module)
    if path is None:
        return set()
    names = _imports_in(path.read_text(), module, path.name == "__init__.py")
    return {n.split(".")[0] for n in names if n and module_file(n.split(".")[0]) is None}


def own_closure(modules: list[str]) -> set[str]:
    """The modules ``modules`` run for their own work: their imports, transitively, without the
    package ``__init__`` registries an import passes through (importing one mode's module
    executes the modes' registry, which holds every mode: that is not this mode's code)."""
    seen: set[str] = set()
    todo = list(modules)
    while todo:
        module = todo.pop()
        path = module_file(module)
        if module in seen or path is None:
            continue
        seen.add(module)
        todo.extend(m for m in direct(module) if not _is_package(m))
    return seen
