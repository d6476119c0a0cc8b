"""The lines healthmon's JSON renderer writes, captured for the log tests."""

import io
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager

from celery import current_app

from healthmon import logging as healthmon_logging


class Lines:
    """The rendered lines of a test, raw and parsed from JSON."""

    def __init__(self, stream: io.StringIO) -> None:
        self.stream = stream

    def text(self) -> str:
        return self.stream.getvalue()

    def all(self) -> list[dict]:
        return [json.loads(line) for line in self.text().splitlines() if line]

    def events(self, event: str) -> list[dict]:
        return [line for line in self.all() if line.get("event") == event]


@contextmanager
def rendered_lines(level: int = logging.INFO) -> Iterator[Lines]:
    """Render every record reaching the root with the JSON formatter settings configure."""
    # The first task queued in a process imports the task modules, and Celery's Django fixup
    # runs django.setup() then, which applies LOGGING again and drops the handlers added
    # here: import them first.
    if "alerts.tasks.deliver" not in current_app.tasks:
        current_app.loader.import_default_modules()
    config = healthmon_logging.logging_config(fmt="json", level="INFO")
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    options = dict(config["formatters"]["structured"])
    handler.setFormatter(options.pop("()")(**options))
    root = logging.getLogger()
    previous = root.level
    root.addHandler(handler)
    root.setLevel(level)
    try:
        yield Lines(stream)
    finally:
        root.removeHandler(handler)
        root.setLevel(previous)
