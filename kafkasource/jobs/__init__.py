"""The spark-submit jobs' shared core: configuration, decoding, running and stopping a query.

The entry points are thin files in the repository's `jobs/` folder (`spark-submit jobs/ingest.py ...`);
what they do lives here, so it ships in the wheel and the --py-files zip with the source itself.
"""
