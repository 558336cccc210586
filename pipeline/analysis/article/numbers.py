"""Every number the article states, registered before the prose is written from it.

A number is registered once with its key, value, unit, interval and source file; the prose then
writes the registered, formatted value, so ``numbers.json`` holds every number of the text and a
reader can trace each one to the file it came from.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path


def decimals_for(*values: float | None) -> int:
    """Digits after the point for a number whose value and interval ends are ``values``: about
    three significant digits of the largest (a count without interval has none)."""
    present = [abs(v) for v in values if v is not None]
    size = max(present)
    if len(present) == 1 and float(size).is_integer():
        return 0
    return 0 if size >= 1000 else 1 if size >= 10 else 2 if size >= 1 else 3


def format_number(value: float, decimals: int, signed: bool = False) -> str:
    """``1234.5, 0`` -> "1,235"; the sign is "-" for negatives and, with ``signed``, "+"."""
    text = f"{abs(value):,.{decimals}f}"
    if float(text.replace(",", "")) == 0:
        return text
    return ("-" if value < 0 else "+" if signed else "") + text


def is_nan(value) -> bool:
    """True for None, NaN and anything that is not a number."""
    try:
        return value is None or math.isnan(float(value))
    except (TypeError, ValueError):
        return True


@dataclass
class Number:
    key: str
    value: float
    unit: str
    source: str
    decimals: int
    lo: float | None = None
    hi: float | None = None
    confidence: float | None = None
    interval: str | None = None  # what the interval is (e.g. "cluster bootstrap over runs")

    def text(self, signed: bool = False) -> str:
        return format_number(self.value, self.decimals, signed)

    def ci(self, signed: bool = False) -> str:
        """The interval as "[lo, hi]", or "" when the number has no interval."""
        if self.lo is None or self.hi is None:
            return ""
        lo = format_number(self.lo, self.decimals, signed)
        return f"[{lo}, {format_number(self.hi, self.decimals, signed)}]"

    def with_ci(self, unit: str = "", signed: bool = False) -> str:
        """Value, unit as the prose writes it, interval: "12.3 us [11.0, 13.1]"."""
        parts = [self.text(signed) + unit, self.ci(signed)]
        return " ".join(p for p in parts if p)

    def as_dict(self) -> dict:
        interval = None if self.lo is None or self.hi is None else [self.lo, self.hi]
        return {
            "value": self.value,
            "unit": self.unit,
            "interval": interval,
            "confidence": self.confidence,
            "interval_kind": self.interval,
            "decimals": self.decimals,
            "text": self.text(),
            "source": self.source,
        }


@dataclass
class Numbers:
    """Every number the article states, by stable key."""

    root: Path
    entries: dict[str, Number] = field(default_factory=dict)

    def add(
        self,
        key: str,
        value: float,
        unit: str,
        source: Path | str,
        lo: float | None = None,
        hi: float | None = None,
        confidence: float | None = None,
        interval: str | None = None,
        decimals: int | None = None,
    ) -> Number:
        value = float(value)
        lo, hi = (None if is_nan(v) else float(v) for v in (lo, hi))
        number = Number(
            key=key,
            value=value,
            unit=unit,
            source=self.rel(source),
            decimals=decimals_for(value, lo, hi) if decimals is None else decimals,
            lo=lo,
            hi=hi,
            confidence=None if is_nan(confidence) else float(confidence),
            interval=interval if lo is not None else None,
        )
        self.entries[key] = number
        return number

    def rel(self, path: Path | str) -> str:
        path = Path(path)
        try:
            return str(path.resolve().relative_to(self.root))
        except ValueError:
            return str(path)

    def to_json(self) -> str:
        data = {k: self.entries[k].as_dict() for k in sorted(self.entries)}
        return json.dumps(data, indent=1, ensure_ascii=False) + "\n"
