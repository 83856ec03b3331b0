"""The schemas auto.register.schemas registers under a subject that has none, derived from the column's Spark type:
Avro named as Spark's to_avro names its records (a record named topLevelRecord, nested records named after their
field in the namespace of their parents, a decimal as a fixed), with a nullable type as a union with null first, so
that such a field may default to null when the schema evolves (Avro takes a union's default from its first
branch), JSON Schema
an object schema in the types the reader maps back (nullable: null allowed; non-nullable fields required).
Protobuf is not derived: a .proto's field numbers and names are the writer's to choose.
"""

from __future__ import annotations

import json

from kafkasource.formats.encoders import SchemaUnfit


def derive_schema(fmt: str, data_type, column: str) -> str:
    """The schema text to register for a column of this Spark type; SchemaUnfit where there is none."""
    if fmt == "avro":
        return json.dumps(_avro_of(data_type, False, "topLevelRecord", "", column))
    if fmt == "json":
        document = {"$schema": "http://json-schema.org/draft-07/schema#", "title": f"{column}"}
        document.update(_json_of(data_type, False, column))
        return json.dumps(document)
    raise SchemaUnfit(
        "auto.register.schemas does not derive Protobuf schemas (a .proto has field numbers and names of its own "
        "that a Spark type cannot say): register the .proto under the subject, then write"
    )


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


def _json_of(data_type, nullable: bool, path: str) -> dict:
    from pyspark.sql import types as T

    simple = {
        T.BooleanType: "boolean",
        T.ByteType: "integer",
        T.ShortType: "integer",
        T.IntegerType: "integer",
        T.LongType: "integer",
        T.FloatType: "number",
        T.DoubleType: "number",
        T.StringType: "string",
    }
    schema: dict
    if type(data_type) in simple:
        schema = {"type": simple[type(data_type)]}
    elif isinstance(data_type, T.StructType):
        schema = {
            "type": "object",
            "properties": {f.name: _json_of(f.dataType, f.nullable, f"{path}.{f.name}") for f in data_type.fields},
        }
        required = [f.name for f in data_type.fields if not f.nullable]
        if required:
            schema["required"] = required
    elif isinstance(data_type, T.ArrayType):
        schema = {"type": "array", "items": _json_of(data_type.elementType, data_type.containsNull, f"{path}[]")}
    elif isinstance(data_type, T.MapType) and isinstance(data_type.keyType, T.StringType):
        schema = {
            "type": "object",
            "additionalProperties": _json_of(data_type.valueType, data_type.valueContainsNull, f"{path}[]"),
        }
    else:
        raise SchemaUnfit(
            f"{path} is {data_type.simpleString()}, which JSON Schema has no type for (its types as the reader maps "
            "them: string, integer, number, boolean, object, array); CAST it, to string for instance"
        )
    if nullable:
        return (
            {"oneOf": [{"type": "null"}, schema]}
            if "properties" in schema or "items" in schema or ("additionalProperties" in schema)
            else {**schema, "type": ["null", schema["type"]]}
        )
    return schema
