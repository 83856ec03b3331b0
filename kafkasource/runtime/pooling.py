"""What the pools of Kafka clients in a Python worker share (reading/consumers.py, writing/producer.py,
writing/transactions.py): Spark reuses its Python workers across tasks and batches, so a client outlives the task
that made it, and each pool keeps idle clients for the next task of the same configuration."""

# an idle client unused this long is closed: its connections and threads are held for nothing, and a stream's next
# batch comes within seconds, a batch job's next write rarely within minutes
IDLE_CLOSE_SECONDS = 300
