"""`make bench`: the pipeline measuring itself (issue 6). Run `python -m bench`."""
