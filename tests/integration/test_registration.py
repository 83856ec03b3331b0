"""kafkasource.register(spark) on a classic session: it replaces the registration Spark made at startup from
pyspark_kafkasource.py (which carries no session environment) with one that carries the application's id and
name, and Spark's warnings about that replacement (at the call, and at every clone of the session, as each
streaming query start makes) stay out of the user's log, unless the logging configuration names their logger."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import kafkasource
from kafkasource.commit.metadata import ENV_APP_ID, ENV_APP_NAME

REGISTRY_LOGGER = "org.apache.spark.sql.execution.datasources.DataSourceManager"


@contextmanager
def jvm_log(spark) -> Iterator[Callable[[], str]]:
    """Every message the JVM's loggers let through meanwhile (one a line), from a log4j appender on the root."""
    log4j = spark.sparkContext._jvm.org.apache.logging.log4j
    writer = spark.sparkContext._jvm.java.io.StringWriter()
    appender = log4j.core.appender.WriterAppender.createAppender(
        log4j.core.layout.PatternLayout.createDefaultLayout(), None, writer, "kafkasource-tests", False, True)
    appender.start()
    context = log4j.LogManager.getContext(False)
    root = context.getConfiguration().getRootLogger()
    root.addAppender(appender, None, None)
    context.updateLoggers()
    try:
        yield writer.toString
    finally:
        root.removeAppender("kafkasource-tests")
        context.updateLoggers()
        appender.stop()


def test_register_replaces_the_registration_without_spark_warning_about_it(spark):
    log4j = spark.sparkContext._jvm.org.apache.logging.log4j
    configuration = log4j.LogManager.getContext(False).getConfiguration()

    def configure_registry_logger(level: str | None) -> None:
        """Give Spark's registry logger a level of its own, as a logging configuration naming it would; None: none"""
        if level is None:
            configuration.removeLogger(REGISTRY_LOGGER)
            log4j.LogManager.getContext(False).updateLoggers()
        else:
            log4j.core.config.Configurator.setLevel(REGISTRY_LOGGER, log4j.Level.toLevel(level))

    def register_and_start_a_query() -> None:
        kafkasource.register(spark)
        spark._jsparkSession.cloneSession().sessionState().dataSourceManager()  # as every streaming query start

    configure_registry_logger(None)  # as in a fresh application, whatever earlier tests did
    try:
        with jvm_log(spark) as logged:
            register_and_start_a_query()
            quiet = logged()
            configure_registry_logger("WARN")  # the user's configuration decides: Spark's warnings come through
            register_and_start_a_query()
            loud = logged()[len(quiet):]
    finally:
        configure_registry_logger(None)
        kafkasource.register(spark)

    assert "registered data source" not in quiet
    assert [line for line in loud.splitlines() if "registered data source" in line] == [  # Spark's other threads
        "The data source kafkasource replaced a previously registered data source.",     # may log meanwhile
        "The data source kafkasource replaced a statically registered data source."]
    manager = spark._jsparkSession.sessionState().dataSourceManager()
    environment = manager.lookupDataSource("kafkasource").dataSourceCls().envVars()
    assert (environment[ENV_APP_ID], environment[ENV_APP_NAME]) == (spark.sparkContext.applicationId,
                                                                    "kafkasource-tests")
