"""Running a probe as the API would, and finding a secret in what it shows: shared by the
probe test modules."""

import base64
import binascii
import contextlib
import re
from collections.abc import Iterator
from functools import cache
from typing import Any
from urllib.parse import quote, quote_plus

from monitoring.probes import ProbeResult, phrases, probe
from monitoring.targets import validate_target

TIMEOUT = 5.0  # for checks that should finish: a bound, never reached when all is well
# A run of base64 letters (either alphabet) long enough to hold a piece of a secret.
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]{8,}")
# A piece of the secret this long, found in decoded base64, is a leak, not a coincidence.
PIECE = 5


def run(
    kind: str, target: str, config: dict[str, Any] | None = None, timeout: float = TIMEOUT
) -> ProbeResult:
    """Check the target now, after the validation the API gives it."""
    validate_target(kind, target)
    return probe(kind, target, config, timeout=timeout)


def _decoded(text: str) -> Iterator[str]:
    """Every run of base64 letters in `text`, decoded at each of the four alignments it may
    have had in the encoding it was cut from."""
    for run_ in _BASE64_RUN.findall(text):
        letters = run_.replace("-", "+").replace("_", "/")
        for start in range(4):
            chunk = letters[start:]
            chunk = chunk[: len(chunk) // 4 * 4]
            with contextlib.suppress(binascii.Error):
                yield base64.b64decode(chunk).decode("latin-1")


def leaked(text: str, user: str, secret: str) -> list[str]:
    """The forms of `secret` found in `text`; a base64 start longer than the user part's
    already gives characters of the secret away, and so does any base64 whose decoding holds
    a piece of the secret (the rest of a Basic header whose start alone was masked)."""
    forms = {secret, quote(secret), quote(secret, safe=""), quote_plus(secret)}
    found = [form for form in forms if form and form in text]
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        whole = encode(f"{user}:{secret}".encode()).decode()
        shown = len(encode(f"{user}:".encode()).decode().rstrip("="))
        if whole[: shown + 2] in text:
            found.append(whole)
    pieces = {secret[i : i + PIECE] for i in range(len(secret) - PIECE + 1)}
    for decoded in _decoded(text):
        found += [f"base64 of {piece!r}" for piece in pieces if piece in decoded]
    return found


_PLACEHOLDER = re.compile(r"\\\{(\w+)\\\}")


@cache
def _pattern(kind: str) -> re.Pattern[str]:
    alternatives = (
        _PLACEHOLDER.sub(r"[\\w.]+", re.escape(phrase)) for phrase in phrases.PHRASES[kind]
    )
    return re.compile("|".join(alternatives))


def is_phrase(kind: str, error: str) -> bool:
    """Whether `error` is one of the kind's phrases, its `{name}` parts filled in."""
    return _pattern(kind).fullmatch(error) is not None
