"""The brokers, as the driver sees them: its one client (metadata, offsets, committed positions), the kafka.*
settings librdkafka gets, and how a refusal by the brokers is told."""
