"""kombu's filesystem transport (the broker of `make run`), writing each message whole.

kombu's own `_put` creates the message file under its final name and then writes it, while a
consumer renames and reads every file of its queue without waiting for the writer's lock: a
worker polling at that moment reads an empty message and dies ("Unrecoverable error:
JSONDecodeError"). Here a message is written under a name no consumer takes, then renamed
into the queue, which is atomic on one filesystem.
"""

import os
import uuid
from time import monotonic
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.json import dumps


class Channel(filesystem.Channel):
    """A filesystem channel whose messages appear in their queue complete."""

    def _put(self, queue: Any, payload: Any, **kwargs: Any) -> None:  # type: ignore[override]
        """Write `payload` to a hidden file, then rename it into `queue`."""
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        # The consumer takes files whose name, after the first dot, is "<queue>.msg".
        partial = os.path.join(self.data_folder_out, f".{name}.part")
        try:
            with open(partial, "wb") as file:
                file.write(dumps(payload).encode())
            os.replace(partial, final)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc


class Transport(filesystem.Transport):
    """The filesystem transport with `Channel` above."""

    Channel = Channel
