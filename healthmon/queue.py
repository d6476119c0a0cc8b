"""Queueing a Celery task by its name, once the transaction that caused it commits.

A service that causes work in a task names the task instead of importing its module: the
task module imports the service (it calls it), so the service importing the task module
would close an import circle. The name is what travels through the broker anyway; each
app's `tasks.py` registers its tasks under the names its services queue.
"""

from collections.abc import Sequence
from functools import partial
from typing import Any

from celery import current_app
from django.db import transaction


def enqueue(name: str, *args: Any, **options: Any) -> None:
    """Queue the task registered as `name` with positional `args` now.

    Looked up in the app's registry rather than sent blind, so an eager test run executes
    it and a misspelt name fails loudly.
    """
    if name not in current_app.tasks:  # outside a worker, autodiscovery waits to be asked
        current_app.loader.import_default_modules()
    current_app.tasks[name].apply_async(args=args, **options)


def enqueue_batch(name: str, items: Sequence[Any], **options: Any) -> None:
    """Queue the task `name` with one argument, a batch of `items`, shown as its size.

    Celery writes a repr of a task's arguments into each message's headers (`argsrepr`,
    what monitoring tools display): for a batch of 200 slots that repr cost about a sixth
    of a publish's CPU, once per location a batch goes to (bench/README.md, scheduler.py),
    and put up to a kilobyte of ids in every message. The count says what a tool needs.
    """
    enqueue(name, items, argsrepr=f"[{len(items)} items]", **options)


def enqueue_on_commit(name: str, *args: Any, **options: Any) -> None:
    """Queue the task once the current transaction commits (at once outside one)."""
    transaction.on_commit(partial(enqueue, name, *args, **options))
