"""Protobuf (valueFormat/keyFormat protobuf): its schemas in the registry's serialized form, the decoder, the
encoder, and why no schema is derived from a Spark type."""
