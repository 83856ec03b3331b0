"""The sink's check, on the driver, of a column it writes as plain JSON (valueFormat=json, keyFormat=json): a
struct, holding no type the encoders (native_encode) do not write as Spark's to_json does, so a write is refused
before any data moves rather than failing in its tasks."""

from __future__ import annotations

from kafkasource.errors import ColumnError


def check_json_column(column: str, data_type) -> None:
    """ColumnError where `data_type` (a pyspark DataType, None: no such column) cannot be written as plain JSON."""
    from pyspark.sql.types import StructType

    if data_type is None:
        raise ColumnError(
            f"option {column}Format is json, but the DataFrame has no {column} column; add one (a struct of the "
            f"fields to write as JSON), or remove {column}Format"
        )
    if not isinstance(data_type, StructType):
        raise ColumnError(
            f"option {column}Format=json writes a struct {column} column as JSON, but {column} is "
            f"{data_type.simpleString()}: make it a struct (struct(...) AS {column}), or remove {column}Format to "
            f"write a string or binary {column} as it is"
        )
    unwritten = _unwritten(data_type, column)
    if unwritten is not None:
        raise ColumnError(
            f"option {column}Format=json cannot write {unwritten}; convert it in Spark first (CAST AS STRING), or "
            f"write to_json(...) AS {column} and remove {column}Format"
        )


def _unwritten(data_type, path: str) -> str | None:
    """The first field under `path` that the encoders do not write, described; None when they write them all."""
    from pyspark.sql import types as t

    if isinstance(data_type, t.StructType):
        for f in data_type.fields:
            found = _unwritten(f.dataType, f"{path}.{f.name}")
            if found is not None:
                return found
        return None
    if isinstance(data_type, t.ArrayType):
        return _unwritten(data_type.elementType, f"{path}[]")
    if isinstance(data_type, t.MapType):
        if isinstance(data_type.keyType, (t.BinaryType, t.StructType, t.ArrayType, t.MapType)):
            # Spark's to_json writes the JVM's text of such a key (a binary one as [B@18ca596c): nothing to match
            return f"{path}, a map with {data_type.keyType.simpleString()} keys"
        return _unwritten(data_type.valueType, f"{path}{{}}")
    unwritten_types = (t.DayTimeIntervalType, t.YearMonthIntervalType, t.CalendarIntervalType, t.NullType)
    if isinstance(data_type, unwritten_types) or type(data_type).__name__ == "VariantType":
        return f"{path} ({data_type.simpleString()})"
    return None
