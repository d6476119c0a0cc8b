"""The secrets a probe sends, in every form a target could quote them back in.

A probe sends a target's password as it is (database protocols), percent-encoded in its URL,
and as `Basic base64(user:password)` in HTTP and WebSocket handshakes; a config header's value
goes as it is. A target that quotes what it received (an error naming the `Authorization`
header it got) hands any of these back, and a masked password is no secret once its base64
is on show. So every form is masked in what a probe reports, and so is the cut-off start of
one: probes shorten the texts they quote.
"""

import base64
import binascii
import json
import re
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import parse_qsl, quote, quote_plus, unquote, urlsplit

from yarl import URL

from monitoring.probes.base import ProbeTask
from monitoring.targets import MASK, is_secret_name

# Schemes whose lone user name is an account name, not a token.
_ACCOUNT_SCHEMES = frozenset({"postgresql", "postgres", "mysql", "mariadb"})
# Shorter secrets are too likely to be ordinary words of a message to be told apart.
MIN_SECRET_LENGTH = 3
# The shortest cut-off start of a form that is masked: below it, too many plain words match.
MIN_FRAGMENT = 8
_HEX_ESCAPE = re.compile(r"%[0-9A-F]{2}")


def secrets_of(task: ProbeTask) -> list[str]:
    """Every form of the task's secrets a message could echo, longest first."""
    plain = _plain_secrets(task) | _wire_spellings(task)
    forms = {form for secret in plain for form in _spellings(secret)}
    for credentials in _basic_credentials(task):
        forms.update(_base64_forms(credentials))
    return sorted({s for s in forms if len(s) >= MIN_SECRET_LENGTH}, key=len, reverse=True)


def scrub(text: str, secrets: Sequence[str]) -> str:
    """The text with every secret form, or a cut-off start of one, masked, on one line.

    Whole forms go first, all of them: forms share starts (the Basic base64 of the
    percent-encoded password and of the plain one begin alike), and masking the shared
    start of one as a cut-off form would leave the rest of the other on show.
    """
    for secret in secrets:
        text = text.replace(secret, MASK)
    for secret in secrets:
        if len(secret) > MIN_FRAGMENT and secret[:MIN_FRAGMENT] in text:
            for end in range(len(secret) - 1, MIN_FRAGMENT - 1, -1):
                text = text.replace(secret[:end], MASK)
    return " ".join(text.split())


def masked(text: str, secrets: Sequence[str]) -> str:
    """The text with every secret form masked, or the text untouched when it quotes none."""
    quoted = any(
        (secret[:MIN_FRAGMENT] if len(secret) > MIN_FRAGMENT else secret) in text
        for secret in secrets
    )
    return scrub(text, secrets) if quoted else text


def _plain_secrets(task: ProbeTask) -> set[str]:
    """The secret values themselves: the target's password, token and secret options, and
    the config's secret-named values (with the credentials inside a Basic header)."""
    found: set[str] = set()
    if "://" in task.target:
        try:
            parts = urlsplit(task.target)
            password = parts.password
        except ValueError:  # a target urllib cannot split has no secret it could find either
            return found | set(_config_secrets(task.config))
        found.update([unquote(password or ""), password or ""])
        if parts.username and password is None and parts.scheme not in _ACCOUNT_SCHEMES:
            found.add(unquote(parts.username))  # a token used as a user name
        found.update(v for k, v in parse_qsl(parts.query) if is_secret_name(k))
    return found | set(_config_secrets(task.config))


def _wire_spellings(task: ProbeTask) -> set[str]:
    """The target's secrets percent-encoded as the HTTP client re-encodes them on the wire,
    which is none of the spellings `quote` gives (`!` and `@` stay, a space is `%20`)."""
    if not task.target.startswith(("http", "ws")):
        return set()
    try:
        url = URL(task.target)
        found = {url.raw_password or ""}
        if url.raw_user and url.raw_password is None:
            found.add(url.raw_user)
    except ValueError:
        return set()
    for pair in url.raw_query_string.split("&"):
        name, _, value = pair.partition("=")
        if is_secret_name(unquote(name)):
            found.add(value)
    return found


def _config_secrets(config: Any) -> Iterable[str]:
    if isinstance(config, dict):
        for key, value in config.items():
            if isinstance(value, str) and is_secret_name(key):
                yield value
                for word in value.split():  # "Bearer <token>": the token alone too
                    yield word
                    yield from _basic_decoded(word)
            else:
                yield from _config_secrets(value)


def _basic_decoded(word: str) -> Iterable[str]:
    """The `user:password` a Basic header's value holds, and the password alone."""
    try:
        decoded = base64.b64decode(word, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return
    if ":" in decoded and decoded.isprintable():
        yield decoded
        yield decoded.partition(":")[2]


def _spellings(secret: str) -> set[str]:
    """A secret as sent and as URLs, JSON and Python quote it."""
    spellings = {secret, json.dumps(secret)[1:-1], repr(secret)[1:-1]}
    for encoded in (quote(secret), quote(secret, safe=""), quote_plus(secret, safe="")):
        spellings.update([encoded, _HEX_ESCAPE.sub(lambda m: m[0].lower(), encoded)])
    return spellings


def _basic_credentials(task: ProbeTask) -> set[str]:
    """The `user:password` texts an HTTP or WebSocket client builds a Basic header from."""
    if "://" not in task.target:
        return set()
    try:
        parts = urlsplit(task.target)
        user, password = parts.username, parts.password
    except ValueError:
        return set()
    if user is None or (password is None and parts.scheme in _ACCOUNT_SCHEMES):
        return set()
    password = password or ""  # a lone token is sent as `token:`
    return {f"{user}:{password}", f"{unquote(user)}:{unquote(password)}"}


def _base64_forms(credentials: str) -> set[str]:
    """Base64 of the credentials in each alphabet and text encoding clients use, unpadded
    (a padded one holds the unpadded one)."""
    forms = set()
    for encoding in ("utf-8", "latin-1"):
        try:
            raw = credentials.encode(encoding)
        except UnicodeEncodeError:
            continue
        forms.add(base64.b64encode(raw).decode().rstrip("="))
        forms.add(base64.urlsafe_b64encode(raw).decode().rstrip("="))
    return forms
