"""Commits to the consumer group: the committer (sync or async, only ever forward), the metadata each commit
carries (who made it), and commit outcomes sent from the committing process to the metrics exporter."""
