"""The benchmark contract: what to run on the server and the client, and how to read the output.

A benchmark knows nothing about modes or hosts. It gives argv lists (run as they are natively,
or inside the tool image by a mode) and turns the client's raw output into tidy sample records.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class ToolOutputError(ValueError):
    """The tool ran but its output says it failed, or it is not the format we expect."""


@dataclass(frozen=True)
class Sample:
    metric: str
    unit: str
    sample: int
    value: float
    t_ns: int | None = None


@dataclass(frozen=True)
class Window:
    """How long one measured window lasts and what it discards at its start."""

    seconds: float
    omit_seconds: float = 0.0


@dataclass
class Benchmark:
    name: str
    tool: str
    binaries: tuple[str, ...]  # what the tool image must contain, as absolute host paths
    port: int
    summary_metric: str  # the one value per window the analysis and the progress line use
    paths: tuple[str, ...] = ("dc", "local")
    server_needs_udp: bool = False
    extra: dict = field(default_factory=dict)

    def server_argv(self) -> list[str]:  # pragma: no cover - contract
        raise NotImplementedError

    def client_argv(self, address: str, window: Window) -> list[str]:  # pragma: no cover
        raise NotImplementedError

    def parse(self, raw: str) -> list[Sample]:  # pragma: no cover - contract
        raise NotImplementedError

    def version_argv(self) -> list[str]:  # pragma: no cover - contract
        raise NotImplementedError

    def format_value(self, value: float) -> str:
        return f"{value:g}"

    def is_connect_error(self, raw: str) -> bool:
        """True when the client could not reach a server that is still starting."""
        return False
