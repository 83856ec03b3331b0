"""The executors' side of a read: one Spark task's offset ranges read by a pooled consumer, on the native path
(the compiled extension filling Arrow buffers) or the Python path (confluent-kafka messages), into Arrow record
batches in Spark's Kafka schema."""
