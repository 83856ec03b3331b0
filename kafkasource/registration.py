"""kafkasource.register: format("kafkasource") registered on a session explicitly, with what the source's processes
need to hear from this one (the application's name for the commits' metadata, log levels, a --py-files zip's
place)."""

from __future__ import annotations

from kafkasource.runtime import logs
from kafkasource.source import KafkaDataSource


def register(spark, environment: dict[str, str] | None = None) -> None:
    """Register format("kafkasource") on this session explicitly.

    Spark registers it by itself at startup, from pyspark_kafkasource.py, where its scan of the Python path finds
    the package (not inside a --py-files zip); that registration carries no environment but PYTHONPATH. On
    classic Spark this call also tells the source's readers the application's id and name (for the metadata of
    their commits) and any `environment` given, through the session's Python environment, which Spark hands to
    the process that runs a registered source's reader: so it replaces Spark's registration, on purpose (see
    _quiet_replacement_warnings). Queries started after the call see it."""
    from kafkasource.commit.metadata import committer_environment

    try:
        context = spark.sparkContext  # a Spark Connect session has none: the server registers with its own
    except Exception:
        context = None
    if context is not None:
        context.environment.update(committer_environment(context.applicationId, context.appName))
        context.environment.update(environment or {})
        _reach_driver_side_runner(spark)
        _propagate_log_levels(spark)
        _quiet_replacement_warnings(spark)
    try:
        spark.dataSource.register(KafkaDataSource)
    except Exception as error:
        if not _startup_registration_kept(error):
            raise


def _startup_registration_kept(error: Exception) -> bool:
    """pyspark 4.0 refuses to replace a data source Spark registered at startup (DATA_SOURCE_ALREADY_EXISTS; 4.1
    replaces it): format("kafkasource") works through that registration, which carries no session environment, so
    the source's commits do not name the application (as over Spark Connect)."""
    condition = getattr(error, "getCondition", None) or getattr(error, "getErrorClass", None)
    if condition is None or condition() != "DATA_SOURCE_ALREADY_EXISTS":
        return False
    import logging

    logging.getLogger("kafkasource").info(
        'format("kafkasource") stays registered as Spark registered it at startup: this Spark (4.0) does not let '
        "a session replace that registration, so the source's commits do not name the application"
    )
    return True


# the JVM logger that says, and says nothing else, that a registration "replaced a statically registered data
# source" (one of Spark's startup scan) or "a previously registered" one
_REGISTRY_LOGGER = "org.apache.spark.sql.execution.datasources.DataSourceManager"


def _quiet_replacement_warnings(spark) -> None:
    """Set that logger to ERROR, unless the JVM's logging configuration gives it a level of its own.

    Spark warns when register replaces its startup registration, and again each time it clones the session (every
    streaming query start does) for as long as the application runs: the clone registers the session's sources
    anew beside the startup ones. Replacing is the point of register, not a mistake for the user to look for.
    Where the JVM's logging is not log4j's, the warnings stay."""
    try:
        log4j = spark.sparkContext._jvm.org.apache.logging.log4j
        if log4j.LogManager.getContext(False).getConfiguration().getLoggers().get(_REGISTRY_LOGGER) is None:
            log4j.core.config.Configurator.setLevel(_REGISTRY_LOGGER, log4j.Level.ERROR)
    except Exception:
        pass


def _propagate_log_levels(spark) -> None:
    """This process's levels of kafkasource's loggers, for the Python processes Spark starts for this source
    (unless spark.executorEnv.KAFKASOURCE_LOG_LEVEL set them): the registration carries the session's
    environment to them. A Connect server's processes take the server's settings."""
    if not type(spark).__module__.startswith("pyspark.sql.connect"):
        spark.sparkContext.environment.setdefault(logs.ENV_VAR, logs.spec())


def _reach_driver_side_runner(spark) -> None:
    """Where this package came in a zip by --py-files: put that zip on the Python path of the processes Spark
    starts for this source. pyspark 4.3 hands --py-files to its executors' Python workers, but the driver-side
    process that runs a stream's reader (planning, offsets, commits) fails with "No module named
    'kafkasource'" without this. The registration carries the session's environment to those processes."""
    import os

    # what holds the package: kafkasource/registration.py two levels down
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not os.path.isfile(root) or type(spark).__module__.startswith("pyspark.sql.connect"):
        return  # an installed package (every process finds it), or a Connect client (the server has its own)
    environment = spark.sparkContext.environment
    paths = [p for p in environment.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in paths:
        environment["PYTHONPATH"] = os.pathsep.join(paths + [root])
