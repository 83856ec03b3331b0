"""kafkasource's log lines in the processes Spark starts (kafkasource.runtime.logs), and the warning when a built native
extension fails to load (kafkasource.runtime.native_extension). Pure logic: no broker, no Spark; a job run in
test_cluster.py shows the lines in the driver's and executors' logs."""

from __future__ import annotations

import logging
import os
from dataclasses import replace

import pytest

from kafkasource.errors import KafkaSourceError
from kafkasource.options.sink import parse_sink_options
from kafkasource.runtime import logs, native_extension
from tests.support.source_options import parse


@pytest.fixture
def clean_logging(monkeypatch):
    """The kafkasource loggers and the root handlers as a fresh Spark worker process has them, restored after."""
    top = logging.getLogger("kafkasource")
    names = ("kafkasource", "kafkasource.reading.consumers", "kafkasource.commit.committer")
    saved = {name: logging.getLogger(name).level for name in names}
    saved_handlers, saved_propagate = list(top.handlers), top.propagate
    monkeypatch.setattr(logs, "_handler", None)
    for name in names:
        logging.getLogger(name).setLevel(logging.NOTSET)
    yield
    logs.leave_to_caller()
    for name, level in saved.items():
        logging.getLogger(name).setLevel(level)
    top.handlers[:], top.propagate = saved_handlers, saved_propagate


def test_a_level_and_levels_of_loggers_under_kafkasource_are_read():
    assert logs.parse("INFO") == {"kafkasource": logging.INFO}
    assert logs.parse("info, kafkasource.reading.consumers=WARNING") == {"kafkasource": logging.INFO,
                                                            "kafkasource.reading.consumers": logging.WARNING}


@pytest.mark.parametrize("value, message", [
    ("LOUD", "KAFKASOURCE_LOG_LEVEL: 'LOUD' is not a level: write DEBUG, INFO, WARNING or ERROR"),
    ("INFO,py4j=DEBUG", "KAFKASOURCE_LOG_LEVEL: 'py4j' is not a logger of kafkasource (kafkasource or kafkasource.*)"),
])
def test_a_bad_value_is_named(value, message):
    with pytest.raises(ValueError) as info:
        logs.parse(value)
    assert str(info.value) == message


def test_the_driver_levels_travel_as_the_variable_and_configure_a_fresh_process(clean_logging, capsys, monkeypatch):
    logging.getLogger("kafkasource").setLevel(logging.INFO)
    logging.getLogger("kafkasource.reading.consumers").setLevel(logging.WARNING)
    value = logs.spec()
    assert value == "INFO,kafkasource.reading.consumers=WARNING"
    logging.getLogger("kafkasource").setLevel(logging.NOTSET)  # now as in a fresh worker process
    logging.getLogger("kafkasource.reading.consumers").setLevel(logging.NOTSET)
    monkeypatch.setattr(logging.root, "handlers", [])  # pytest's own capture handlers: set up for each test

    assert logs.configure_from_environment({"KAFKASOURCE_LOG_LEVEL": value}) is True
    logging.getLogger("kafkasource.commit.committer").info("committed group g: t-0@5")
    logging.getLogger("kafkasource.reading.consumers").info("hidden: below this logger's level")
    logging.getLogger("kafkasource.reading.consumers").warning("shown: a warning")

    lines = capsys.readouterr().err.splitlines()
    assert [line.split(" ", 2)[2] for line in lines] == [
        f"INFO kafkasource.commit.committer [pid {os.getpid()}]: committed group g: t-0@5",
        f"WARNING kafkasource.reading.consumers [pid {os.getpid()}]: shown: a warning"]
    assert logs.configure_from_environment({"KAFKASOURCE_LOG_LEVEL": value}) is False  # once per process


def test_a_process_that_configured_logging_keeps_its_configuration(clean_logging, monkeypatch):
    monkeypatch.setattr(logging.root, "handlers", [logging.NullHandler()])
    assert logs.configure_from_environment({"KAFKASOURCE_LOG_LEVEL": "DEBUG"}) is False
    assert logging.getLogger("kafkasource").level == logging.NOTSET
    assert logs.configure_from_environment({}) is False


def test_a_built_extension_that_fails_to_load_is_told_from_one_not_built():
    def broken(name):
        raise ImportError("libssl.so.3: cannot open shared object file: No such file or directory")

    def missing(name):
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)

    assert native_extension.load_extension(broken) == (
        None, "libssl.so.3: cannot open shared object file: No such file or directory")
    assert native_extension.load_extension(missing) == (None, None)
    assert native_extension.load_extension(lambda name: "module") == ("module", None)


def test_read_and_write_path_auto_warn_once_each_naming_why_a_built_extension_did_not_load(monkeypatch, caplog):
    monkeypatch.setattr(native_extension, "EXTENSION", None)
    monkeypatch.setattr(native_extension, "LOAD_ERROR", "libssl.so.3: cannot open shared object file")
    monkeypatch.setattr(native_extension, "_warned", set())
    config = parse(readPath="auto").fetch_config()

    with caplog.at_level(logging.WARNING, logger="kafkasource.runtime.native_extension"):
        assert config.wants_native() is False
        assert config.wants_native() is False

    assert [r.getMessage() for r in caplog.records] == [
        "readPath=auto: kafkasource's native extension could not be loaded (libssl.so.3: cannot open shared object "
        "file); reading with the slower Python path"]
    # the sink's writePath=auto tells its own fallback, once, in its words
    sink = parse_sink_options({"kafka.bootstrap.servers": "127.0.0.1:9", "topic": "t"}, streaming=False)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="kafkasource.runtime.native_extension"):
        assert (sink.native(), sink.native()) == (False, False)
    assert [r.getMessage() for r in caplog.records] == [
        "writePath=auto: kafkasource's native extension could not be loaded (libssl.so.3: cannot open shared object "
        "file); writing with the slower Python path"]
    with pytest.raises(KafkaSourceError) as info:
        replace(config, read_path="native").wants_native()
    assert str(info.value).startswith("readPath is native, but kafkasource's native extension could not be loaded on "
                                      "this executor: libssl.so.3: cannot open shared object file: install")
