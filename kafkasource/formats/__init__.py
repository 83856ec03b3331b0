"""Keys and values in a schema registry's wire format, or plain JSON (valueFormat / keyFormat): the registry client,
the wire format, the one table of formats, the column-level drivers that decode and encode a batch's key/value with
the format the table names, and one folder per format (Avro, Protobuf, JSON Schema) holding its schemas, its decoder,
its encoder and the schema auto.register.schemas derives; plain_json/ holds plain JSON's schema and decoder."""
