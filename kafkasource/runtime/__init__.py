"""The processes kafkasource runs in: the pyspark it needs, the compiled extension it may load, its log lines in
the Python processes Spark starts, and the stop() Spark never calls."""
