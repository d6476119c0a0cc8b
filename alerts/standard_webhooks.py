"""Standard Webhooks signing (https://www.standardwebhooks.com) of generic webhooks.

Each request carries `webhook-id` (the event's idempotency key: the same on every retry of
one delivery, another for each event), `webhook-timestamp` (when this attempt was signed, so
a receiver can refuse a replay) and `webhook-signature: v1,<base64 HMAC-SHA256 of
"id.timestamp.body">`, made with the reference `standardwebhooks` library.

The signing key comes from the channel's secret. A secret made since Standard Webhooks is
`whsec_` + base64 of 32 random bytes, and the key is those bytes (what the libraries do
with such a secret). A secret from before is used as it always was for
`X-Healthmon-Signature`: its UTF-8 bytes are the key, so a receiver builds its verifier
with `Webhook(secret.encode())` (Python) or `new Webhook(secret, {format: "raw"})` (Node).
"""

import base64
import secrets
from datetime import datetime

from standardwebhooks.webhooks import Webhook

PREFIX = "whsec_"
ID_HEADER = "webhook-id"
TIMESTAMP_HEADER = "webhook-timestamp"
SIGNATURE_HEADER = "webhook-signature"
KEY_BYTES = 32


def new_secret() -> str:
    """A new channel's signing secret: `whsec_` and base64 of 32 random bytes."""
    return PREFIX + base64.b64encode(secrets.token_bytes(KEY_BYTES)).decode()


def signing_key(secret: str) -> bytes:
    """The HMAC key of a secret: the bytes a `whsec_` secret encodes, else its UTF-8 bytes
    (a secret from before Standard Webhooks, still valid)."""
    if secret.startswith(PREFIX):
        return base64.b64decode(secret.removeprefix(PREFIX))
    return secret.encode()


def signed_headers(secret: str, *, message_id: str, at: datetime, body: bytes) -> dict[str, str]:
    """The three Standard Webhooks headers of one attempt at sending `body`."""
    signature = Webhook(signing_key(secret)).sign(message_id, at, body.decode())
    return {
        ID_HEADER: message_id,
        TIMESTAMP_HEADER: str(int(at.timestamp())),
        SIGNATURE_HEADER: signature,
    }
