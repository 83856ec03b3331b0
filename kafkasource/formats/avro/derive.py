"""The Avro schema auto.register.schemas registers under a subject that has none, derived from the column's Spark
type and named as Spark's to_avro names its records: a record named topLevelRecord, nested records named after
their field in the namespace of their parents, a decimal as a fixed; a nullable type is a union with null first, so
that such a field may default to null when the schema evolves (Avro takes a union's default from its first
branch).
"""

from __future__ import annotations

import json

from kafkasource.formats.shapes import SchemaUnfit


def derive_avro(data_type, column: str) -> str:
    """The schema text to register for a column of this Spark type; SchemaUnfit where there is none."""
    return json.dumps(_avro_of(data_type, False, "topLevelRecord", "", column))


def _avro_of(data_type, nullable: bool, name: str, namespace: str, path: str):
    from pyspark.sql import types as T

    simple = {
        T.BooleanType: "boolean",
        T.ByteType: "int",
        T.ShortType: "int",
        T.IntegerType: "int",
        T.LongType: "long",
        T.FloatType: "float",
        T.DoubleType: "double",
        T.StringType: "string",
        T.BinaryType: "bytes",
    }
    schema: object
    if type(data_type) in simple:
        schema = simple[type(data_type)]
    elif isinstance(data_type, T.DateType):
        schema = {"type": "int", "logicalType": "date"}
    elif isinstance(data_type, T.TimestampNTZType):
        schema = {"type": "long", "logicalType": "local-timestamp-micros"}
    elif isinstance(data_type, T.TimestampType):
        schema = {"type": "long", "logicalType": "timestamp-micros"}
    elif isinstance(data_type, T.DecimalType):
        size = next(n for n in range(1, 17) if 2 ** (8 * n - 1) > 10**data_type.precision)
        schema = {"type": "fixed", "name": name, "size": size, "logicalType": "decimal",
                  "precision": data_type.precision, "scale": data_type.scale}  # fmt: skip
        if namespace:
            schema["namespace"] = namespace
    elif isinstance(data_type, T.StructType):
        inner = f"{namespace}.{name}" if namespace else name
        schema = {
            "type": "record",
            "name": name,
            "fields": [
                {"name": f.name, "type": _avro_of(f.dataType, f.nullable, f.name, inner, f"{path}.{f.name}")}
                for f in data_type.fields
            ],
        }
        if namespace:
            schema["namespace"] = namespace
    elif isinstance(data_type, T.ArrayType):
        schema = {"type": "array", "items": _avro_of(data_type.elementType, data_type.containsNull, name, namespace,
                                                     f"{path}[]")}  # fmt: skip
    elif isinstance(data_type, T.MapType) and isinstance(data_type.keyType, T.StringType):
        schema = {"type": "map", "values": _avro_of(data_type.valueType, data_type.valueContainsNull, name,
                                                    namespace, f"{path}[]")}  # fmt: skip
    else:
        raise SchemaUnfit(f"{path} is {data_type.simpleString()}, which has no Avro type to derive; CAST it")
    return ["null", schema] if nullable else schema
