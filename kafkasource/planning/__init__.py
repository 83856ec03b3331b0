"""Planning, on the driver and pure: which topic-partitions a query reads, where each starts and ends, the offset
ranges of a batch and the Spark tasks over them, and what counts as data loss. It asks the brokers only through
the small protocols its callers hand it (cluster/ answers them for real)."""
