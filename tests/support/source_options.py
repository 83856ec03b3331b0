"""The source's options as the option tests read them: a subscription to one topic on a broker that need not exist,
with more options on top, parsed for a stream or a batch read."""

from __future__ import annotations

from kafkasource.options import SourceOptions, parse_options

BASE = {"kafka.bootstrap.servers": "broker:9092", "subscribe": "orders"}


def for_read(options: SourceOptions, streaming: bool) -> SourceOptions:
    return options.for_stream() if streaming else options.for_batch()


def parse(streaming: bool = True, **options: str) -> SourceOptions:
    return for_read(parse_options({**BASE, **options}), streaming)
