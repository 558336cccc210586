"""`python -m pipeline.inventory check FILE`: every problem of an inventory, one a line, no
traceback; exit 2 when there is any (``pipeline.collect.inventory`` holds the validator).
`python -m pipeline.params` does the same for params.yaml and its profile."""

from __future__ import annotations

import sys

from pipeline.collect.inventory import main

if __name__ == "__main__":
    sys.exit(main())
