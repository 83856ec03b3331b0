"""The sink: `df.write` and `df.writeStream` `.format("kafkasource")`. The columns it reads (the built-in Kafka
sink's rules; its options are kafkasource/options/sink.py's), the registry formats' encoding step, the producers
that write each Spark task's rows, the delivery errors they tell, exactly-once by Kafka transactions with a replay
marker per task, and dead letters (the sink's, and the ingest job's)."""
