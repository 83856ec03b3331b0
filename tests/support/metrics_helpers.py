"""The metrics exporter's exposition read back as the tests compare it: a scrape's or a textfile's samples by name
and labels, by partition."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def parse(text: str) -> dict[str, dict[tuple, float]]:
    """Exposition text read back by prometheus_client's parser: {sample name: {sorted (label, value) pairs: value}}
    (a counter's samples are named with their _total, as Prometheus stores them)."""
    found: dict[str, dict[tuple, float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return found


def by_partition(samples: dict[tuple, float]) -> dict[int, float]:
    return {int(dict(labels)["partition"]): value for labels, value in samples.items()}


def scrape(url: str) -> dict[str, dict[tuple, float]]:
    with urllib.request.urlopen(url, timeout=10) as answer:
        assert answer.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
        return parse(answer.read().decode())
