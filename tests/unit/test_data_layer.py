"""Collection never loads analysis: the data model both read (``pipeline.data``: the tables'
schema, the kept tool output, the interference rule) lies below both, so a collection host needs
none of analysis's code and an analysis edit does not change what a campaign's digest covers."""

import json
import subprocess
import sys

from pipeline import imports

# Imports every module of a package in a fresh interpreter and prints the pipeline modules loaded.
PROBE = """
import importlib, json, pkgutil, sys
loaded = set()
for package in sys.argv[1:]:
    root = importlib.import_module(package)
    for info in pkgutil.walk_packages(root.__path__, package + "."):
        importlib.import_module(info.name)
print(json.dumps(sorted(m for m in sys.modules if m.startswith("pipeline."))))
"""


def _loaded(*packages: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", PROBE, *packages], capture_output=True,
                         text=True, check=True, timeout=300)  # fmt: skip
    return json.loads(out.stdout)


def test_importing_every_collection_module_loads_no_analysis_module():
    loaded = _loaded("pipeline.collect")
    assert "pipeline.collect.campaign" in loaded and "pipeline.data.schema" in loaded
    assert [m for m in loaded if m.startswith("pipeline.analysis")] == []


def test_the_probe_sees_analysis_when_it_is_loaded():
    # the same probe on the data layer and analysis: it must report what analysis loads
    loaded = _loaded("pipeline.data", "pipeline.analysis")
    assert "pipeline.analysis.interference" in loaded
    assert "pipeline.data.interference" in loaded


def test_no_collection_or_data_module_reaches_analysis_even_lazily():
    # read from the source: an import inside a function counts too
    modules = [m for m in imports.package_modules()
               if m.startswith(("pipeline.collect", "pipeline.data"))]  # fmt: skip
    reached = {m: imports.closure([m]) for m in modules}
    crossing = {m: sorted(r for r in found if r.startswith("pipeline.analysis"))
                for m, found in reached.items()}  # fmt: skip
    assert {m: r for m, r in crossing.items() if r} == {}


def test_the_data_layer_imports_neither_collection_nor_the_lab():
    modules = [m for m in imports.package_modules() if m.startswith("pipeline.data")]
    assert len(modules) >= 4  # the package, schema, rawlog, interference, calibration
    reached = imports.closure(modules)
    assert sorted(m for m in reached if m.startswith(("pipeline.collect", "pipeline.lab"))) == []
