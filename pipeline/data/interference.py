"""The interference watch's flagging rule, one window on one host at a time: collection applies
it as each window ends (to decide whether to measure the step again) and analysis applies it to
every window read back (``pipeline.analysis.interference.flag``), so both decide alike."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Thresholds:
    """The flagging rule's thresholds (params.yaml ``analysis.interference_*``) and how many
    times a flagged step is measured again (``analysis.interference_retries``)."""

    cpus: float = 0.25
    steal: float = 0.05
    probe: float = 2.0
    retries: int = 2

    @classmethod
    def from_params(cls, analysis: dict | None) -> Thresholds:
        """From params.yaml's ``analysis`` section (or any dict with its ``interference_*``
        keys); keys it lacks keep their defaults."""
        given = {k.removeprefix("interference_"): v for k, v in (analysis or {}).items()
                 if k.startswith("interference_")}  # fmt: skip
        known = {k: given[k] for k in ("cpus", "steal", "probe", "retries") if k in given}
        return cls(**known)


def reasons(other_cpus: float | None, steal_share: float | None, probe_ratio: float | None,
            cpus: float, steal: float, probe: float) -> str:  # fmt: skip
    """Why a window on one host is flagged ("" when it is not): the rule of ``flag``, one
    window at a time (collection decides with it whether to measure a step again)."""

    def above(value, limit) -> bool:  # noqa: ANN001
        return value is not None and value == value and float(value) > limit

    found = [
        f"other processes > {cpus:g} CPUs" if above(other_cpus, cpus) else "",
        f"steal > {steal:.0%}" if above(steal_share, steal) else "",
        f"probe > {probe:g}x its median" if above(probe_ratio, probe) else "",
    ]
    return "; ".join(f for f in found if f)
