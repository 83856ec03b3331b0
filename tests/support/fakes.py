"""Small fakes of our own interfaces, shared by tests."""

from __future__ import annotations


class FakeClock:
    """Seconds that pass only when a test says so."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now
