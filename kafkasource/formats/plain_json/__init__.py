"""valueFormat / keyFormat json: plain JSON text (no registry, no prefix).

The source reads it with a schema the user gives (valueSchema / keySchema: a DDL string or Spark's JSON form of a
StructType), into the rows Spark's from_json(CAST(value AS STRING), schema, options) gives. One module per job: the
schema's two forms (ddl, schema), the json.* options (options), the JSON text as Jackson reads it with Spark's flags
(text), Spark's date and timestamp strings (datetimes), a parsed document laid into the schema's type as Spark's
JacksonParser lays it (convert), and the column's decoder (decode). Pure Python, no JVM: the decoder runs in Python
workers.

The sink writes a struct column as Spark's to_json writes it (native_encode, natively or by json_text in Python).
"""
