"""The compiled extension (native/, Rust over librdkafka) as its #[pymethods] declare it: what mypy checks the
callers against, since a compiled module offers no signatures of its own. Results are the plain tuples the
extension returns; kafkasource.runtime.native_results names their fields.

Keep in step with native/src/lib.rs, consumer.rs (consumer/columns.rs), producer.rs, arrow_buffers.rs, avro.rs,
avro_encode.rs and json_encode.rs.
"""

from collections.abc import Callable
from typing import Any, final

__version__: str

def librdkafka_version() -> str:
    """librdkafka's version, as "2.12.1"."""

# (code, name, text, fatal, retriable, txn_requires_abort)
class KafkaCallError(Exception):
    """A librdkafka call of the native producer failed; args: (code, name, text, fatal, retriable,
    txn_requires_abort)."""

# called with None (as confluent-kafka's oauth_cb is called with the oauthbearer config): (token, expiry in seconds
# since the epoch, principal, extensions), for SASL OAUTHBEARER
TokenProvider = Callable[[None], tuple[str, float, str, object]]

@final
class Buffer:
    """A buffer Rust owns and Python reads through the buffer protocol (pyarrow wraps it without copying)."""

    def __buffer__(self, flags: int, /) -> memoryview: ...
    def __len__(self) -> int: ...

@final
class BinaryBuffers:
    """An Arrow binary (or string) column's buffers: validity bits, i32 offsets, bytes."""

    @property
    def validity(self) -> Buffer: ...
    @property
    def offsets(self) -> Buffer: ...
    @property
    def data(self) -> Buffer: ...

@final
class HeaderBuffers:
    """The headers column's buffers: the lists' validity bits and i32 offsets, and their entries' keys and values."""

    @property
    def validity(self) -> Buffer: ...
    @property
    def offsets(self) -> Buffer: ...
    @property
    def keys(self) -> BinaryBuffers: ...
    @property
    def values(self) -> BinaryBuffers: ...

@final
class TakenRows:
    """The rows `Consumer.take` hands over, column by column as Arrow buffers; `headers` is None without headers."""

    @property
    def rows(self) -> int: ...
    @property
    def keys(self) -> BinaryBuffers: ...
    @property
    def values(self) -> BinaryBuffers: ...
    @property
    def offsets(self) -> Buffer: ...
    @property
    def timestamps_us(self) -> Buffer: ...
    @property
    def timestamp_types(self) -> Buffer: ...
    @property
    def headers(self) -> HeaderBuffers | None: ...

# (row it came before, topic, partition, code, text)
ErrorEvent = tuple[int, str | None, int, int, str]

class Consumer:
    """An assign-only consumer (it never joins its group, never commits) that reads into Arrow columns."""

    def __init__(self, config: list[tuple[str, str]], token_provider: TokenProvider | None = None) -> None: ...
    def assign(self, partitions: list[tuple[str, int, int]]) -> None: ...
    def unassign(self) -> None: ...
    def assignment(self) -> list[tuple[str, int]]: ...
    def position(self, topic: str, partition: int) -> int: ...
    def watermarks(self, topic: str, partition: int, timeout_ms: int) -> tuple[int, int]: ...
    def consume(
        self, max_messages: int, timeout_ms: int, until: int, with_headers: bool
    ) -> tuple[int, int, list[ErrorEvent]]:
        """(records appended, offset of the last one or -1, the error events among them in order)."""
    def client_errors(self) -> list[tuple[int, str]]:
        """(code, text) of each client-level error since the last call, oldest first."""
    def pending(self) -> tuple[int, int]:
        """(rows, key/value/header bytes) appended and not yet taken."""
    def truncate(self, rows: int) -> None: ...
    def take(self, with_headers: bool) -> TakenRows: ...
    def close(self) -> None: ...

# (row of the task, code, text, fatal, topic, partition, key + value + header bytes)
Refusal = tuple[int, int, str, bool, str, int, int]
# (row of the task, code, librdkafka's error name, text, topic, partition, key + value bytes)
Failure = tuple[int, int, str, str, str, int, int]

class Producer:
    """A librdkafka producer that hands the rows of Arrow record batches to librdkafka from their columns."""

    def __init__(self, config: list[tuple[str, str]], token_provider: TokenProvider | None = None) -> None: ...
    def produce_batch(
        self, batch: tuple[object, object], topic: str | None, start: int, first_row: int, strict: bool
    ) -> tuple[int, int, Refusal | None]:
        """(the row to resume from, rows refused at once and skipped, the refusal that stopped it or None);
        `batch`: the capsules of pyarrow's `__arrow_c_array__()`."""
    def poll(self, timeout_ms: int) -> int: ...
    def flush(self, timeout_ms: int) -> int: ...
    def purge(self) -> None: ...
    def __len__(self) -> int: ...
    def deliveries(self, reset: bool = False) -> tuple[int, int, Failure | None]:
        """(delivered, failed, the first failure or None) since the last reset."""
    def client_errors(self) -> list[tuple[int, str, bool]]:
        """(code, text, fatal) of each client-level error since the last call, oldest first."""
    def learn_brokers(self, timeout_ms: int) -> bool: ...
    def init_transactions(self, timeout_ms: int) -> None: ...
    def begin_transaction(self) -> None: ...
    def send_offsets_to_transaction(
        self, topic: str, partition: int, offset: int, metadata: str | None, group_id: str, timeout_ms: int
    ) -> None: ...
    def commit_transaction(self, timeout_ms: int) -> None: ...
    def abort_transaction(self, timeout_ms: int) -> None: ...
    def close(self) -> None: ...

# (length, validity or None, [buffers], [children]) for pyarrow's Array.from_buffers
DecodedColumn = tuple[int, Buffer | None, list[Buffer], list[Any]]

class AvroDecoder:
    """Decodes schema-registry framed Avro payloads into the reader schema's Arrow column."""

    def __init__(self, column: tuple[Any, ...]) -> None: ...
    def add_writer(self, id: int, plan: tuple[Any, ...]) -> None: ...
    def add_unresolvable(self, id: int, reason: str) -> None: ...
    def decode(
        self, length: int, offset: int, validity: object | None, offsets: object, data: object
    ) -> tuple[DecodedColumn, DecodedColumn]:
        """(values column, reasons column) of the `length` payloads from row `offset` of the buffers."""

@final
class JsonDecoder:
    """Decodes plain JSON payloads into a schema's Arrow column, handing the records off its path to Python."""

    def __init__(self, column: tuple[Any, ...], plan: tuple[Any, ...], zone: int | None) -> None: ...
    def decode(
        self, length: int, offset: int, validity: object | None, offsets: object, data: object
    ) -> tuple[DecodedColumn, list[int]]:
        """(values column, rows handed over) of the `length` payloads from row `offset` of the buffers."""

@final
class AvroEncodePlan:
    """A writer schema's encoding plan, built once per process and schema."""

    def __init__(self, plan: tuple[Any, ...]) -> None: ...

def encode_avro(
    plan: AvroEncodePlan, schema_id: int, column: object, path: str
) -> tuple[int, BinaryBuffers, list[tuple[int, str | None]]]:
    """(payload count, the payloads' buffers, the rows that do not fit with why); NotImplementedError where
    this encoder does not cover the schema and column."""

def encode_json(
    column: object, zone_starts: list[int], zone_offsets: list[int], ignore_null_fields: bool
) -> tuple[int, BinaryBuffers]:
    """(row count, the JSON texts' buffers) of a struct column written as Spark's to_json writes it, a null row a
    null text; the UTC offsets in force from each start second on cover its zoned timestamps
    (kafkasource.formats.plain_json.native_encode.zone_table). NotImplementedError where this encoder does not
    cover the column."""
