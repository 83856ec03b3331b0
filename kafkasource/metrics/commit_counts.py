"""The outcomes of the source's commits as the exporter counts them: per group, mode and Kafka error name."""

from __future__ import annotations

from kafkasource.commit.outcomes import CommitOutcome


class CommitCounts:
    """Commit outcomes per group, as counters."""

    def __init__(self):
        self.successes: dict[tuple[str, str], int] = {}  # (group, mode)
        self.failures: dict[tuple[str, str, str], int] = {}  # (group, mode, reason)
        self.retries: dict[tuple[str, str], int] = {}  # (group, reason)

    def add(self, outcome: CommitOutcome) -> None:
        if outcome.outcome == "success":
            key = (outcome.group, outcome.mode)
            self.successes[key] = self.successes.get(key, 0) + 1
        elif outcome.outcome == "failure":
            key3 = (outcome.group, outcome.mode, outcome.reason)
            self.failures[key3] = self.failures.get(key3, 0) + 1
        else:
            key = (outcome.group, outcome.reason)
            self.retries[key] = self.retries.get(key, 0) + 1
