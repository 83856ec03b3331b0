"""What the tests share and do not collect: helpers that talk to the broker, Spark and the registry, the fixtures'
helpers, and the scripts some tests start in processes of their own (`python -m tests.support.<name>`)."""
