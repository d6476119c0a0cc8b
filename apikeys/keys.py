"""The API key format: `<prefix>_live_<lookup id><secret><checksum>`, all base62.

- lookup id: 8 characters, public, indexes the stored record;
- secret: 32 characters, about 190 bits of randomness;
- checksum: CRC32 of everything before it, 6 characters, so that a mistyped, truncated or
  made-up key is refused without a database query (as GitHub's token format does).

Only a SHA-256 digest of the whole key is stored. The key carries 190 random bits, so a
slow password hash would add nothing but latency: a digest is enough to make a stolen
database useless.
"""

import hashlib
import re
import secrets
import string
import zlib
from dataclasses import dataclass

ALPHABET = string.digits + string.ascii_uppercase + string.ascii_lowercase
LOOKUP_LENGTH = 8
SECRET_LENGTH = 32
CHECKSUM_LENGTH = 6
_KEY = re.compile(
    rf"(?P<prefix>[a-z][a-z0-9]{{0,15}})_live_(?P<lookup>[0-9A-Za-z]{{{LOOKUP_LENGTH}}})"
    rf"[0-9A-Za-z]{{{SECRET_LENGTH}}}(?P<checksum>[0-9A-Za-z]{{{CHECKSUM_LENGTH}}})"
)


@dataclass(frozen=True)
class ParsedKey:
    """A well-formed key: its public parts and the digest to compare."""

    display_prefix: str
    lookup_id: str
    digest: str


def _base62(number: int, width: int) -> str:
    digits = []
    for _ in range(width):
        number, remainder = divmod(number, 62)
        digits.append(ALPHABET[remainder])
    return "".join(reversed(digits))


def _random(length: int) -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(length))


def _checksum(text: str) -> str:
    return _base62(zlib.crc32(text.encode()), CHECKSUM_LENGTH)


def digest(key: str) -> str:
    """The stored form of a key: hex SHA-256."""
    return hashlib.sha256(key.encode()).hexdigest()


def looks_like_key(credential: str) -> bool:
    """Whether a bearer credential is meant as an API key (JWTs never contain `_live_`)."""
    return "_live_" in credential


def generate(prefix: str) -> tuple[str, ParsedKey]:
    """A new key and its public parts."""
    body = f"{prefix}_live_{_random(LOOKUP_LENGTH)}{_random(SECRET_LENGTH)}"
    key = body + _checksum(body)
    parsed = parse(key)
    assert parsed is not None  # noqa: S101 - generate and parse share one format
    return key, parsed


def parse(key: str) -> ParsedKey | None:
    """The key's parts, or None if it is malformed or its checksum does not match."""
    match = _KEY.fullmatch(key)
    if match is None or _checksum(key[:-CHECKSUM_LENGTH]) != match["checksum"]:
        return None
    return ParsedKey(
        display_prefix=f"{match['prefix']}_live_{match['lookup']}",
        lookup_id=match["lookup"],
        digest=digest(key),
    )
