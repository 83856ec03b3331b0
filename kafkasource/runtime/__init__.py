"""The processes kafkasource runs in: the pyspark it needs, the compiled extension it may load and the Arrow arrays
over its buffers, its log lines in the Python processes Spark starts, the secrets kept out of its messages, and the
stop() Spark never calls."""
