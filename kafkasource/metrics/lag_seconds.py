"""Lag in seconds: how long ago the log end passed the query's position, which is about the age of the oldest
record the query has not read (written when the log end moved from its offset o to o + 1).

As kafka-lag-exporter does, each partition keeps a short history of (time, log end) points, one
per progress in which the log end had moved (a log end that stands still keeps the time it was
first seen there). The time at which the log end reached o + 1 is interpolated linearly
between the two points around it; lag in seconds is `now` minus that time, so it grows while a
query stands still behind a log that does not move. A position the log end had already passed
at the oldest point kept is placed by extrapolating the rate between the oldest and newest
points; with no growth seen at all, that oldest time gives a lower bound. A query at the log end
has lag 0. A backlog written in a burst before the first point is dated by the rate seen since, and so
shows older than it is: an estimate, as kafka-lag-exporter's.
"""

from __future__ import annotations

from collections import deque
from itertools import pairwise

MAX_POINTS = 64


class LogEndHistory:
    def __init__(self, max_points: int = MAX_POINTS):
        self._points: deque[tuple[float, int]] = deque(maxlen=max_points)

    def observe(self, at: float, log_end: int) -> None:
        if self._points and log_end <= self._points[-1][1]:
            if log_end < self._points[-1][1]:  # a log that went back (recreated, truncated): start over
                self._points.clear()
                self._points.append((at, log_end))
            return
        self._points.append((at, log_end))

    def reached_at(self, offset: int) -> float | None:
        """When the log end reached `offset` (the record before it was written), as far as the history tells;
        None with no history."""
        if not self._points:
            return None
        points = list(self._points)
        (t0, e0), (tn, en) = points[0], points[-1]
        if offset <= e0:
            if en > e0 and tn > t0:
                return t0 - (e0 - offset) * (tn - t0) / (en - e0)
            return t0
        for (t1, e1), (t2, e2) in pairwise(points):
            if e1 < offset <= e2:
                return t1 + (offset - e1) * (t2 - t1) / (e2 - e1)
        return tn  # beyond the newest log end seen: not lagging

    def lag_seconds(self, offset: int, now: float) -> float | None:
        """Seconds the query is behind at position `offset`; 0 at or past the newest log end seen."""
        if not self._points:
            return None
        if offset >= self._points[-1][1]:
            return 0.0
        reached = self.reached_at(offset + 1)
        assert reached is not None  # there is a history
        return max(0.0, now - reached)
