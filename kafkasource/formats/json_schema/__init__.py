"""JSON Schema (valueFormat/keyFormat json-schema): its schemas and their $refs, the decoder, the encoder, and the
schema derived from a Spark type."""
