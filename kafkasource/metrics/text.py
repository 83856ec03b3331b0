"""Prometheus' text exposition format (version 0.0.4), for the few metric families the exporter has.

A dozen families of gauges and counters need no client library: each family is its HELP and TYPE
lines and one line per labelled sample, label values escaped as the format requires.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@dataclass
class Family:
    name: str
    kind: str  # gauge | counter
    help: str
    samples: list[tuple[dict[str, str], float]] = field(default_factory=list)

    def add(self, value: float, **labels: object) -> None:
        self.samples.append(({k: str(v) for k, v in labels.items()}, value))


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer() and abs(value) < 2 ** 53:
        return str(int(value))
    return repr(float(value))


def render(families: list[Family]) -> str:
    """The exposition text: every family's HELP and TYPE, even one without samples yet, so that its name
    is known from the first scrape on."""
    lines = []
    for family in families:
        lines.append(f"# HELP {family.name} {family.help}")
        lines.append(f"# TYPE {family.name} {family.kind}")
        for labels, value in family.samples:
            rendered = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
            lines.append(f"{family.name}{{{rendered}}} {_number(value)}" if rendered else
                         f"{family.name} {_number(value)}")
    return "\n".join(lines) + "\n"


_SAMPLE = re.compile(r'(\w+)(?:\{(.*)\})? (\S+)')
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
_ESCAPED = re.compile(r"\\(.)")


def parse(text: str) -> dict[str, dict[tuple, float]]:
    """Exposition text (as `render` writes it) read back: {metric name: {sorted (label, value) pairs: value}}."""
    found: dict[str, dict[tuple, float]] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.fullmatch(line)
        if match is None:
            raise ValueError(f"not a sample line: {line!r}")
        labels = tuple(sorted((k, _ESCAPED.sub(lambda m: "\n" if m.group(1) == "n" else m.group(1), v))
                              for k, v in _LABEL.findall(match.group(2) or "")))
        found.setdefault(match.group(1), {})[labels] = float(match.group(3))
    return found
