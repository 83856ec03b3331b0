"""The options of format("kafkasource"): one frozen, typed view of a reader's options (SourceOptions, in
options/source.py) and of a writer's (SinkOptions, in options/sink.py), every bad value refused naming the option,
from helpers that read one option's text (options/values.py); valueFormat/keyFormat and their options, the
source's and the sink's (options/formats.py)."""

from kafkasource.options.source import IGNORED_BUILTIN_OPTIONS, SOURCE_OPTIONS, SourceOptions, parse_options
from kafkasource.options.values import parse_duration_ms

__all__ = ["IGNORED_BUILTIN_OPTIONS", "SOURCE_OPTIONS", "SourceOptions", "parse_duration_ms", "parse_options"]
