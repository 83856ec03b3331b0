"""The Kafka record as Spark and Arrow see it, in one place: the reader's rows, the sink's columns and the registry
formats' dead letters share it, as Spark's own connector has one record schema for its reader and its writer."""
