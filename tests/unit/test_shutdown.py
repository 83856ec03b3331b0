"""SIGTERM and closing, with no broker: a SIGTERM inside a deferred block ends the process only once the block is
done; a bounded close gives up on a client whose close hangs."""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
import textwrap
import threading
import time

from kafkasource.runtime.shutdown import (
    close_within,
)
from tests.support.job_helpers import REPO_ROOT

DEFERRED_BLOCK = textwrap.dedent("""
    import os, signal, time
    from kafkasource.runtime.shutdown import exit_on_sigterm, signal_deferred

    assert exit_on_sigterm()
    with signal_deferred():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.2)  # Python runs the handler at the next bytecode: well before this ends
        print("block finished", flush=True)
    print("after the block", flush=True)
""")


def test_a_sigterm_inside_a_deferred_block_ends_the_process_only_once_the_block_is_done():
    child = subprocess.run([sys.executable, "-c", DEFERRED_BLOCK], cwd=REPO_ROOT, capture_output=True, text=True,
                           timeout=60)
    assert (child.stdout, child.returncode) == ("block finished\n", 128 + signal.SIGTERM), child.stderr


def test_close_within_waits_for_a_close_that_finishes_and_gives_up_on_one_that_hangs(caplog):
    quick = HangingClose(hang=False)
    close_within(quick, "quick client", seconds=5)
    assert quick.closed.is_set()

    stuck = HangingClose(hang=True)
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="kafkasource.runtime.shutdown"):
        close_within(stuck, "stuck client", seconds=0.5)
    took = time.monotonic() - started
    stuck.release.set()
    assert 0.5 <= took < 5, took
    assert [r.getMessage() for r in caplog.records] == [
        "closing the stuck client did not finish within 0.5 s; leaving it to end with the process"]


class HangingClose:
    """A client whose close() waits until released: as librdkafka's close on a broker that went away."""

    def __init__(self, hang: bool):
        self.release = threading.Event()
        self.closed = threading.Event()
        if not hang:
            self.release.set()

    def close(self) -> None:
        self.release.wait(60)
        self.closed.set()
