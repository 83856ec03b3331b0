"""Who made a commit: the small JSON every commit carries as its offset metadata, and reading it back.

A Python data source's stream reader is told neither the Spark application nor the query it serves:
Spark's runner process hands it the pickled source, the schema and then calls (latestOffset,
commit, ...), with no query id, run id or batch id. What the runner does get is the environment
of the Python function the source was registered with, which is the session's
`sparkContext.environment` at registration time. `kafkasource.register(spark)` (which the jobs
call) puts the application's id and name there, so on classic Spark the metadata names them;
over Spark Connect the server registers the source with its own environment, and the metadata
holds what the reader itself knows (host, process, time, version). Each commit's time (`at`, ms)
is there because the broker keeps a commit's time to itself (OffsetFetch does not return it).

Kafka refuses metadata longer than the broker's `offset.metadata.max.bytes` (4096 by default):
names are cut so that the JSON never exceeds MAX_BYTES, a quarter of that.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass

ENV_APP_ID = "KAFKASOURCE_SPARK_APP_ID"
ENV_APP_NAME = "KAFKASOURCE_SPARK_APP_NAME"
MAX_BYTES = 1024
LEGACY = "kafkasource"  # what commits carried before the JSON: still read as "kafkasource, nothing more known"


def version() -> str:
    try:
        from importlib.metadata import version as installed

        return installed("kafkasource")
    except Exception:  # run from a checkout that is not installed
        return "unknown"


_VERSION = version()
_HOST = socket.gethostname()


def committer_environment(app_id: str, app_name: str) -> dict[str, str]:
    """What register(spark) adds to the session's Python environment for the source's runner to read."""
    return {ENV_APP_ID: app_id, ENV_APP_NAME: app_name}


def metadata(environ: Mapping[str, str] | None = None, now_ms: int | None = None) -> str:
    """The metadata of a commit made now by this process, at most MAX_BYTES of UTF-8."""
    environ = os.environ if environ is None else environ
    fields = {
        "by": "kafkasource",
        "version": _VERSION,
        "app_id": environ.get(ENV_APP_ID),
        "app": environ.get(ENV_APP_NAME),
        "host": _HOST,
        "pid": os.getpid(),
        "at": int(time.time() * 1000) if now_ms is None else now_ms,
    }
    fields = {k: v for k, v in fields.items() if v is not None}
    text = _dumps(fields)
    for name in ("app", "host", "app_id", "version"):  # names that can be long, the likeliest first
        while name in fields and fields[name] != "…" and len(text.encode()) > MAX_BYTES:
            fields[name] = _shorter(str(fields[name]), len(text.encode()) - MAX_BYTES)
            text = _dumps(fields)
    return text


def _shorter(value: str, excess: int) -> str:
    """`value` cut, ending in '…', by about `excess` bytes of JSON: a character takes 1 to 6 bytes there (\\u00XX)."""
    value = value.removesuffix("…")
    return value[: max(0, len(value) - excess // 6 - 3)] + "…"


def _dumps(fields: dict) -> str:
    return json.dumps(fields, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class CommitAuthor:
    """What a commit's metadata says about who made it; fields are None where it does not say."""

    by: str
    app_id: str | None = None
    app: str | None = None
    host: str | None = None
    pid: int | None = None
    at_ms: int | None = None
    version: str | None = None

    def describe(self) -> str:
        """One line for a table: 'orders-ingest (local-1795620802996) on host pid 4242'."""
        if self.app is None and self.app_id is None and self.host is None:
            return self.by
        who = self.app or "?"
        if self.app_id:
            who += f" ({self.app_id})"
        if self.host:
            who += f" on {self.host}" + (f" pid {self.pid}" if self.pid is not None else "")
        return who


def parse(text: str | None) -> CommitAuthor | None:
    """The committer a commit's metadata names: ours (JSON or the older plain "kafkasource"), or another
    client's metadata as it is; None for empty metadata."""
    if not text:
        return None
    try:
        fields = json.loads(text)
    except ValueError:
        fields = None
    if not isinstance(fields, dict) or fields.get("by") != "kafkasource":
        return CommitAuthor(by=text)
    at, pid = fields.get("at"), fields.get("pid")
    return CommitAuthor(
        by="kafkasource",
        app_id=fields.get("app_id"),
        app=fields.get("app"),
        host=fields.get("host"),
        pid=pid if isinstance(pid, int) else None,
        at_ms=at if isinstance(at, int) else None,
        version=fields.get("version"),
    )
