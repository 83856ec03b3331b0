"""Avro (valueFormat/keyFormat avro): its schemas and their resolution, the native and the Python decoder, the
native and the Python encoder, and the schema derived from a Spark type."""
