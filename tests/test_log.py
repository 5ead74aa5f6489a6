"""The package logger writes to the stderr of the moment, not to the one it was created under."""

import io
import logging
import sys

from unstereo import log


def test_the_logger_follows_sys_stderr_after_a_swapped_stream_is_closed(monkeypatch):
    # The failure this guards against: the first get_logger call ran inside click's CliRunner, whose stderr was
    # closed after the invocation; every later record then printed "--- Logging error ---" into the next output.
    root = logging.getLogger("unstereo")
    monkeypatch.setattr(root, "handlers", [])
    swapped = io.StringIO()
    monkeypatch.setattr(sys, "stderr", swapped)
    logger = log.get_logger("test_log")
    logger.info("first")
    swapped.close()
    now = io.StringIO()
    monkeypatch.setattr(sys, "stderr", now)
    logger.info("second")
    assert now.getvalue().endswith("INFO unstereo.test_log: second\n")
