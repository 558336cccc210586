"""`make bench`: the pipeline measuring itself. Run `python -m harness`."""
