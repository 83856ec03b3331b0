"""The sink: `df.write` and `df.writeStream` `.format("kafkasource")`. The columns it reads (the built-in Kafka
sink's rules; its options are kafkasource/options/sink.py's), the producers that write each Spark task's rows, the
delivery errors they tell, and exactly-once by Kafka transactions with a replay marker per task."""
