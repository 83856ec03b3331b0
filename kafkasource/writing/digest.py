"""What a task wrote, in a few bytes: how many records, and a digest of their topics, keys, values, headers and
partitions, taken from the Arrow record batches the producer is handed (both write paths take the same batches, so
a marker one path wrote is checked by the other).

An exactly-once stream's batch marker keeps both (writing/markers.py), so that a replay of the batch can show it
holds the same records before it skips them: a replay over other records (a checkpoint restored from a backup, a
query whose partitions changed) fails instead of skipping rows that were never written.

The digest does not depend on how Spark cut the task's rows into Arrow batches: each column is hashed as two
streams of its own (the lengths of its values, a null as -1, and their bytes), and the streams' digests are hashed
together at the end. Nulls' bytes are never read (Arrow leaves their content undefined).

The hash is XXH3 with 128 bits, and a digest says so: `xxh3:` and 32 hexadecimal digits. It guards against a replay
Spark plans over other records by mistake (a rewound checkpoint, a changed query), not against records crafted to
collide, which only someone who can also rewrite the query's checkpoint could bring. For records as they occur, two
different sets share a digest with probability 2^-128, as with a cryptographic hash cut to 128 bits, and XXH3 takes
a fraction of SHA-256's CPU (bench/DIGEST.md), which an exactly-once task spends beside its producer. A digest
without the prefix is SHA-256 cut to 128 bits, which kafkasource wrote into its markers before: a replay of a batch
such a marker names is hashed that way, so it is still recognised after an upgrade.
"""

from __future__ import annotations

import hashlib
import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol

import xxhash

from kafkasource.records.schema import HEADERS, KEY, PARTITION, TOPIC, VALUE
from kafkasource.writing.rows import Columns

DIGEST_BYTES = 16
XXH3 = "xxh3"  # the digest's hash, and the prefix that names it in a marker
SHA256 = "sha256"  # the hash of a digest without a prefix (markers of an earlier kafkasource)


class _Hash(Protocol):
    def update(self, data, /) -> None: ...

    def digest(self) -> bytes: ...

    def hexdigest(self) -> str: ...


HASHES: dict[str, Callable[[], _Hash]] = {XXH3: xxhash.xxh3_128, SHA256: hashlib.sha256}


def hash_of(digest: str | None) -> str:
    """The hash a marker's digest was taken with, so that a replay is hashed the same way."""
    return XXH3 if digest is not None and digest.startswith(XXH3 + ":") else SHA256


class RecordDigest:
    """The count and digest of the record batches passed through `over()`, taken with `hashing` (a name in HASHES)."""

    def __init__(self, columns: Columns, hashing: str = XXH3):
        self._columns = columns
        self._hashing = hashing
        self._streams: dict[str, _Hash] = {}
        self.records = 0

    def over(self, batches: Iterable) -> Iterator:
        """The same batches, each counted as it passes and hashed on a thread of its own, in order, while the producer
        takes it (hashing and Arrow's kernels release the GIL, so the digest overlaps the producer's work). Once the
        batches are exhausted, the digest is complete; what hashing raised is raised then."""
        hasher = _Hasher(self)
        try:
            for batch in batches:
                self.records += batch.num_rows
                hasher.put(batch)
                yield batch
        finally:
            hasher.close()

    def add(self, batch) -> None:
        """Count and hash one batch, in this thread."""
        self.records += batch.num_rows
        self._hash(batch)

    def _hash(self, batch) -> None:
        if self._columns.topic is None:
            self._binary(TOPIC, batch.column(TOPIC))
        if self._columns.key:
            self._binary(KEY, batch.column(KEY))
        self._binary(VALUE, batch.column(VALUE))
        if self._columns.headers:
            self._headers(batch.column(HEADERS))
        if self._columns.partition:
            self._numbers(PARTITION, batch.column(PARTITION))

    def hexdigest(self) -> str:
        total = HASHES[self._hashing]()
        total.update(self.records.to_bytes(8, "little"))
        for name in sorted(self._streams):
            total.update(name.encode() + b"\0" + self._streams[name].digest())
        digits = total.hexdigest()[: DIGEST_BYTES * 2]
        return digits if self._hashing == SHA256 else f"{self._hashing}:{digits}"

    def _stream(self, name: str) -> _Hash:
        found = self._streams.get(name)
        if found is None:
            found = self._streams[name] = HASHES[self._hashing]()
        return found

    def _numbers(self, name: str, column) -> None:
        """The column's numbers as 8-byte little-endian integers, read from Arrow's own buffer: numpy is not a
        dependency of the package, and `to_numpy()` fails without it. Arrow keeps numbers in the machine's byte
        order, little-endian on every platform the package is built for (x86_64, aarch64)."""
        import pyarrow as pa

        filled = column.fill_null(-1) if column.null_count else column
        numbers = filled.cast(pa.int64())
        stream = self._stream(name)  # an empty column's stream is part of the digest too
        _validity, data = numbers.buffers()
        if data is not None:
            width = 8
            stream.update(memoryview(data)[numbers.offset * width : (numbers.offset + len(numbers)) * width])

    def _binary(self, name: str, column) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc

        self._numbers(name + ".length", pc.binary_length(column))
        plain = column.fill_null(b"" if not _is_text(column.type) else "") if column.null_count else column
        if pa.types.is_string(plain.type):
            plain = plain.view(pa.binary())  # the same layout: no copy
        elif not pa.types.is_binary(plain.type):
            plain = plain.cast(pa.binary())  # large and view types
        _validity, offsets, data = plain.buffers()
        if data is None or len(plain) == 0:
            return
        bounds = memoryview(offsets).cast("i")
        start, end = bounds[plain.offset], bounds[plain.offset + len(plain)]
        self._stream(name + ".bytes").update(memoryview(data)[start:end])

    def _headers(self, column) -> None:
        import pyarrow.compute as pc

        self._numbers(HEADERS + ".count", pc.list_value_length(column))
        entries = column.flatten()  # the entries of the rows' lists, a sliced column's own
        keys, values = entries.flatten()
        self._binary(HEADERS + ".key", keys)
        self._binary(HEADERS + ".value", values)


class _Hasher:
    """The thread that hashes a task's batches for its RecordDigest, at most QUEUED_BATCHES behind the producer."""

    QUEUED_BATCHES = 8
    _END = object()

    def __init__(self, digest: RecordDigest):
        self._digest = digest
        self._queue: queue.Queue = queue.Queue(self.QUEUED_BATCHES)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="kafkasource-digest", daemon=True)
        self._thread.start()

    def put(self, batch) -> None:
        if self._error is not None:
            raise self._error
        self._queue.put(batch)

    def close(self) -> None:
        self._queue.put(self._END)
        self._thread.join()
        if self._error is not None:
            raise self._error

    def _run(self) -> None:
        while (batch := self._queue.get()) is not self._END:
            if self._error is None:
                try:
                    self._digest._hash(batch)
                except BaseException as exc:  # raised in the task's thread, by put() or close()
                    self._error = exc


def _is_text(kind) -> bool:
    import pyarrow as pa

    return pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind)
