"""The sink's Arrow step before the producer, with valueFormat/keyFormat: each batch of a task with its key/value
written in the registry's wire format (kafkasource.formats.encoding), so whichever producer writes the batch sees
binary columns only. A row that does not fit its writer schema fails the task, naming the column, the row and why,
before any record of its batch is handed on; with deadLetterTopic such rows go there instead, in the same batch
(kafkasource.writing.dead_letters).
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from kafkasource.errors import EncodeError
from kafkasource.formats.encoding import Encoding, encode_columns
from kafkasource.writing.dead_letters import dead_letter_rows


def encode_batches(
    batches: Iterator[pa.RecordBatch],
    encoding: Encoding | None,
    topic: str | None,
    partition: int,
    native: bool = True,
) -> Iterator[pa.RecordBatch]:
    """A task's batches with key/value encoded (unchanged when `encoding` is None); `topic` is the topic option,
    `partition` the Spark partition, for messages; `native` as for encode_batch."""
    if encoding is None:
        yield from batches
        return
    seen = 0
    for batch in batches:
        yield encode_batch(batch, encoding, topic, partition, seen, native)
        seen += batch.num_rows


def encode_batch(
    batch: pa.RecordBatch,
    encoding: Encoding,
    topic: str | None,
    partition: int = 0,
    first_row: int = 0,
    native: bool = True,
) -> pa.RecordBatch:
    """The batch with its formatted columns encoded. `native`: Avro columns go through the native encoder where
    the extension has one and it covers the schema and column (kafkasource.formats.avro.native_encode), else through
    the Python encoder; False: the Python encoder for every column."""
    arrays, bad = encode_columns(batch, encoding, native)
    if bad and encoding.dead_letter_topic is None:
        row, [(column_name, reason), *_] = next(iter(bad.items()))
        more = f" ({len(bad) - 1} more rows of this batch do not fit)" if len(bad) > 1 else ""
        raise EncodeError(
            f"cannot write row {first_row + row} of Spark partition {partition}: the {column_name} column does "
            f"not fit its writer schema: {reason}{more}. No record of its batch was written; fix the row, or set "
            "deadLetterTopic to write such rows there"
        )
    if encoding.dead_letter_topic is not None:
        dead_letter_rows(batch, arrays, bad, encoding.dead_letter_topic, encoding.formatted, topic)
    return pa.RecordBatch.from_arrays(list(arrays.values()), names=list(arrays))
