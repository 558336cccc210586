"""The container-overhead study: lab, collection and analysis code used by the notebooks."""

import sys

# jsonschema, which papermill (through nbformat) and altair import, loads rfc3987_syntax when it
# is installed (JupyterLab's dependencies install it) only to check the "iri" string format, and
# that builds an Earley parser at import: about a second in every stage's process and again in
# its kernel. Nothing here checks that format; without the module jsonschema skips it.
sys.modules.setdefault("rfc3987_syntax", None)
