"""Plain JSON values and keys (no schema registry): decoded at the source with a schema the user gives, encoded
by the sink. The source's side (valueFormat / keyFormat json, valueSchema / keySchema: a DDL string or Spark's JSON
form of a StructType) gives the rows Spark's from_json(CAST(value AS STRING), schema, options) gives. One module per
job: the schema's two forms (ddl, schema), the json.* options (options), the JSON text as Jackson reads it with
Spark's flags (text), Spark's date and timestamp strings (datetimes), a parsed document laid into the schema's type
as Spark's JacksonParser lays it (convert), a value written back as from_json's STRING fields hold it (written), and
the column's decoder (decode), pure Python with no JVM since it runs in Python workers, and the native
extension's decoder, which reads the plain records into Arrow and hands the rest to that one (native_decode). The
sink's side writes a struct column as Spark's to_json writes it (json_text, native_encode), after the driver's
check of the column (sink_column); the sink's json.* options are read by options too."""
