"""The JSON Schema auto.register.schemas registers under a subject that has none, derived from the column's Spark
type: an object schema in the types the reader maps back (nullable: null allowed; non-nullable fields required).
"""

from __future__ import annotations

import json

from kafkasource.formats.shapes import SchemaUnfit


def derive_json(data_type, column: str) -> str:
    """The schema text to register for a column of this Spark type; SchemaUnfit where there is none."""
    document = {"$schema": "http://json-schema.org/draft-07/schema#", "title": f"{column}"}
    document.update(_json_of(data_type, False, column))
    return json.dumps(document)


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
