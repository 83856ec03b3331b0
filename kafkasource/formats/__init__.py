"""Keys and values in a schema registry's wire format (valueFormat / keyFormat): the registry client, the wire
format, and one module per format (Avro, Protobuf, JSON Schema) decoding a column of payloads into typed Arrow."""
