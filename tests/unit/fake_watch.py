"""What a host answers the interference watch (pipeline/collect/watch.py) in the tests whose
pools are fakes: a quiet reading, its clock a second later at each call."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

from pipeline.collect import watch

_CLOCK = itertools.count(1)


def answer(command) -> SimpleNamespace | None:  # noqa: ANN001
    """The fake host's reply to ``command`` when it is a reading, else None."""
    if not watch.is_reading(command):
        return None
    t_ns = next(_CLOCK) * 1_000_000_000
    return SimpleNamespace(status=0, stdout=f"cpu 100 2 {t_ns} 10000000 10 0 5 900 0 0 0 0\n",
                           stderr="")  # fmt: skip
