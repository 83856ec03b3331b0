"""A column of plain JSON payloads into an Arrow column of the schema's struct type, record by record, with the rows
from_json gives (kafkasource.formats.plain_json.convert says how each value is laid in).

The bytes are read as UTF-8 with each malformed sequence replaced by U+FFFD, as Spark's reader of the string does. A
payload of only whitespace, like a null payload, is a null value (from_json's null). A record that is not JSON,
whose root does not fit the schema (an array for a struct), or whose fields do not all convert, is malformed: under
json.mode=PERMISSIVE it is from_json's row (the fields that converted, the others null; every field null when
nothing could be read), with the record's text in the schema's corrupt-record field if it has one
(json.columnNameOfCorruptRecord, a STRING); under FAILFAST it is a null value and the reason, which the source's
onDecodeError fails the query with or keeps.

The decoder takes the same arguments as the registry formats' (decode(payloads, writer schemas)), and keeps nothing
between columns but its converter, so a native decoder can take its place per column.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

import pyarrow as pa
from pyspark.sql.types import DataType, StringType, StructType

from kafkasource.formats.plain_json.convert import Failed, Partial, root_converter
from kafkasource.formats.plain_json.datetimes import zone
from kafkasource.formats.plain_json.options import PlainJsonOptions
from kafkasource.formats.plain_json.schema import arrow_type
from kafkasource.formats.plain_json.text import MAX_DEPTH, Malformed, parse_document


class PlainJsonDecoder:
    """Decodes payloads into `schema` (a struct, or an array or a map; every field nullable) as `options` say."""

    def __init__(self, schema: DataType, options: PlainJsonOptions):
        self.schema, self.options = schema, options
        # a document nested as deep as Jackson allows (MAX_DEPTH) is parsed, cleaned and laid in by recursion: room
        # for it beside the Python worker's own frames (the limit is the process's; it is only ever raised)
        sys.setrecursionlimit(max(sys.getrecursionlimit(), 6 * MAX_DEPTH))
        self.arrow_type = arrow_type(schema)
        fields = schema.fields if isinstance(schema, StructType) else []
        corrupt = next((f for f in fields if f.name == options.corrupt_record_column), None)
        self.corrupt = corrupt.name if corrupt is not None and isinstance(corrupt.dataType, StringType) else None
        non_numeric = options.flags.allow_non_numeric_numbers
        self.convert = root_converter(schema, zone(options.time_zone), non_numeric, self.corrupt)

    def decode(self, payloads: pa.Array, writer_schemas: Mapping[int, object] = {}) -> tuple[pa.Array, pa.Array]:
        values, reasons = [], []
        for payload in payloads.to_pylist():
            value, reason = (None, None) if payload is None else self.decode_one(payload)
            values.append(value)
            reasons.append(reason)
        return pa.array(values, self.arrow_type), pa.array(reasons, pa.string())

    def decode_one(self, payload: bytes) -> tuple[object, str | None]:
        """(the value, None), or for a malformed record FAILFAST's (None, the reason) or PERMISSIVE's (the row from_json
        gives, None)."""
        text = payload.decode("utf-8", "replace")
        partial: dict | None = None
        try:
            present, document = parse_document(text, self.options.flags)
            if not present:
                return None, None
            if document is None:
                reason = "the record is JSON null"
            else:
                return self.convert(document), None
        except Malformed as exc:
            reason = f"malformed JSON: {exc}"
        except RecursionError:
            reason = "malformed JSON: nested too deep"
        except Partial as exc:
            partial, reason = exc.value, f"the record does not fit the schema: {exc.reason}"  # type: ignore[assignment]
        except Failed as exc:
            reason = f"the record does not fit the schema: {exc}"
        if self.options.mode == "FAILFAST":
            return None, reason
        if not isinstance(self.schema, StructType):
            return partial, None  # an array or a map: from_json's partial result, or null
        row = partial if partial is not None else dict.fromkeys(self.schema.names)
        if self.corrupt is not None:
            row[self.corrupt] = text
        return row, None
