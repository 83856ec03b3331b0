"""Settings of the executors' read, shared by both read paths."""

# An Arrow batch handed to Spark ends at BATCH_ROWS records or at BATCH_BYTES of keys, values and headers (the
# Python path counts values), checked after each consumed chunk: fewer batches cost Spark less to take, and
# moderate ones let Spark's JVM turn one into rows while the worker reads the next (bench/TUNING.md).
BATCH_ROWS = 50_000
BATCH_BYTES = 16 * 1024 * 1024

# messages per consume() call: enough to amortize the call, few enough that a batch ends near its caps
CONSUME_CHUNK = 10_000
