"""kafkasource's log lines in the Python processes Spark starts: the driver-side process that runs a stream's
reader (planning, offsets, the group's commits) and the executors' Python workers (the reads).

Nobody configures Python logging in those processes, so without this their lines at INFO are lost and only
warnings reach stderr (Python's last-resort handler). Spark copies those processes' stderr into the
driver's and the executors' logs (the console in client mode; the driver's and executors' stderr files, as
the cluster manager's UI and log tools show them). The levels come from one environment variable,
KAFKASOURCE_LOG_LEVEL: a level ("INFO"), optionally followed by levels of loggers under kafkasource
("INFO,kafkasource.reading.consumers=WARNING"). The jobs set it from their own logging configuration; elsewhere set
`spark.executorEnv.KAFKASOURCE_LOG_LEVEL`, which Spark hands to both kinds of process.
"""

from __future__ import annotations

import logging
import os
import sys

ENV_VAR = "KAFKASOURCE_LOG_LEVEL"
FORMAT = "%(asctime)s %(levelname)s %(name)s [pid %(process)d]: %(message)s"

_handler: logging.Handler | None = None


def parse(spec: str) -> dict[str, int]:
    """The levels a KAFKASOURCE_LOG_LEVEL value names, by logger ("kafkasource" for the bare level).
    ValueError names a part that is not a level."""
    levels: dict[str, int] = {}
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        name, _, level = part.rpartition("=")
        name = name.strip() or "kafkasource"
        if name != "kafkasource" and not name.startswith("kafkasource."):
            raise ValueError(f"{ENV_VAR}: {name!r} is not a logger of kafkasource (kafkasource or kafkasource.*)")
        number = logging.getLevelName(level.strip().upper())
        if not isinstance(number, int):
            raise ValueError(f"{ENV_VAR}: {level.strip()!r} is not a level: write DEBUG, INFO, WARNING or ERROR")
        levels[name] = number
    return levels


def spec() -> str:
    """This process's levels of kafkasource's loggers, as a KAFKASOURCE_LOG_LEVEL value."""
    parts = [logging.getLevelName(logging.getLogger("kafkasource").getEffectiveLevel())]
    for name, logger in sorted(logging.root.manager.loggerDict.items()):
        if name.startswith("kafkasource.") and isinstance(logger, logging.Logger) and logger.level != logging.NOTSET:
            parts.append(f"{name}={logging.getLevelName(logger.level)}")
    return ",".join(parts)


def configure_from_environment(environ=os.environ) -> bool:
    """Send the kafkasource loggers' lines to stderr at the levels KAFKASOURCE_LOG_LEVEL names, in a process
    where nothing configured logging (once; a process whose root logger has handlers, like a job's driver or
    a notebook, keeps its own configuration). Whether it did."""
    global _handler
    value = environ.get(ENV_VAR)
    if not value or _handler is not None or logging.root.handlers:
        return False
    try:
        levels = parse(value)
    except ValueError as exc:
        print(f"kafkasource: {exc}; logging left as it is", file=sys.stderr)
        return False
    _handler = logging.StreamHandler(sys.stderr)
    _handler.setFormatter(logging.Formatter(FORMAT))
    top = logging.getLogger("kafkasource")
    top.addHandler(_handler)
    top.propagate = False  # a later configuration of the root logger must not print each line twice
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)
    return True


def leave_to_caller() -> None:
    """Undo configure_from_environment: the caller configures logging itself (the jobs do)."""
    global _handler
    if _handler is not None:
        top = logging.getLogger("kafkasource")
        top.removeHandler(_handler)
        top.propagate = True
        _handler = None
