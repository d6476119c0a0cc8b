"""Probe targets: which URLs fit which endpoint type, and how their secrets are masked.

A target is checked strictly, because a URL that two parsers read differently (a backslash,
two `@`, a stray space) is how requests end up somewhere other than where the user looked.
Whether the address it resolves to may be probed is the probe engine's network policy.
"""

import ipaddress
import re
from typing import Any
from urllib.parse import SplitResult, unquote, urlsplit

import psycopg
from psycopg import conninfo

from monitoring.models import EndpointType

MASK = "****"
MAX_TARGET_LENGTH = 2048

SCHEMES: dict[str, tuple[str, ...]] = {
    EndpointType.HTTP: ("http", "https"),
    EndpointType.GRAPHQL: ("http", "https"),
    EndpointType.ELASTICSEARCH: ("http", "https"),
    EndpointType.GRPC: ("grpc", "grpcs"),
    EndpointType.POSTGRESQL: ("postgresql", "postgres"),
    EndpointType.MYSQL: ("mysql", "mariadb"),
    EndpointType.REDIS: ("redis", "rediss"),
    EndpointType.WEBSOCKET: ("ws", "wss"),
    EndpointType.TCP: ("tcp",),
    EndpointType.SMTP: ("smtp", "smtps"),
}
SCHEMES[EndpointType.CUSTOM] = tuple(dict.fromkeys(s for v in SCHEMES.values() for s in v))
# Not offered to `custom`: neither speaks over a connection whose protocol could be detected.
SCHEMES[EndpointType.ICMP] = ("icmp",)
SCHEMES[EndpointType.DNS] = ("dns",)
SCHEMES[EndpointType.TLS] = ("tls",)  # not for custom: a TLS port speaks something on top

# Names of query parameters, headers and config keys whose values are secrets: any name
# containing one of these fragments, or made of words (split on `-`, `_`, `.`) among these.
_SECRET_FRAGMENT = re.compile(
    r"pass|secret|token|auth|cookie|credential|signature|apikey", re.IGNORECASE
)
_SECRET_WORDS = frozenset({"key", "sig", "code", "session", "sid", "pwd", "pw", "jwt"})
# Schemes whose lone user name is an account, not a credential (trust auth, pgpass).
_ACCOUNT_USER_SCHEMES = frozenset({"postgresql", "postgres", "mysql", "mariadb"})
_LABEL = r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
_HOSTNAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*\.?")
_HOST_PORT = re.compile(r"(?P<host>\[[^\]]*\]|[^:\[\]]+):(?P<port>\d{1,5})")


class TargetError(ValueError):
    """A target that does not fit its endpoint type; the message is for the user."""


def is_secret_name(name: str) -> bool:
    """Whether a query parameter, header or option of this name holds a secret."""
    words = re.split(r"[^a-z0-9]+", name.lower())
    return bool(_SECRET_FRAGMENT.search(name)) or any(word in _SECRET_WORDS for word in words)


def _check_host(host: str) -> None:
    if host.startswith("["):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError as exc:
            raise TargetError("The host is not a valid IPv6 address.") from exc
    elif len(host) > 253 or not _HOSTNAME.fullmatch(host):
        raise TargetError("The host is not a valid host name or IP address.")


def _check_port(port: int | None, required: bool) -> None:
    if port is None:
        if required:
            raise TargetError("A port is required, as in host:port.")
    elif not 1 <= port <= 65535:
        raise TargetError("The port must be between 1 and 65535.")


def _check_characters(target: str) -> None:
    if len(target) > MAX_TARGET_LENGTH:
        raise TargetError(f"Must be at most {MAX_TARGET_LENGTH} characters.")
    if not target.isascii() or not target.isprintable() or " " in target:
        raise TargetError(
            "Spaces, control and non-ASCII characters are not allowed: percent-encode them, "
            "and write international host names in their xn-- form."
        )
    if "\\" in target:
        raise TargetError("Backslashes are not allowed.")
    if "#" in target:
        # libpq reads past a `#`, urllib stops at it: refuse, so every client sees one host.
        raise TargetError("Fragments (#) are not allowed; write # in a password as %23.")


def _split(target: str) -> SplitResult:
    try:
        parts = urlsplit(target)
        port = parts.port
    except ValueError as exc:
        raise TargetError("The port must be a number between 1 and 65535.") from exc
    after_authority = target.partition("://")[2][len(parts.netloc) :]
    if parts.netloc.count("@") > 1 or "@" in after_authority:
        raise TargetError(
            "Write `@` as %40 inside a user name, a password, a path or a query: drivers "
            "disagree on where such a host ends."
        )
    host = parts.netloc.rpartition("@")[2]
    host = host.rsplit(":", 1)[0] if port is not None or host.endswith(":") else host
    if not host:
        raise TargetError("A host is required.")
    _check_host(host)
    _check_port(port, required=False)
    return parts


def _check_host_port(target: str) -> None:
    match = _HOST_PORT.fullmatch(target)
    if match is None:
        raise TargetError("Use a URL (scheme://host...) or host:port.")
    _check_host(match["host"])
    _check_port(int(match["port"]), required=True)


# Database drivers read hosts, sockets and certificate files from the query string: only
# these harmless options may appear there, so the host shown is the host connected to and
# no local file is ever read on a user's behalf.
_DATABASE_QUERY_OPTIONS: dict[str, frozenset[str]] = {
    "postgresql": frozenset(
        {"sslmode", "application_name", "connect_timeout", "target_session_attrs", "password"}
    ),
    "mysql": frozenset({"ssl", "ssl_mode", "charset", "connect_timeout", "password"}),
    "redis": frozenset({"ssl_cert_reqs", "protocol", "client_name", "password"}),
}
_SCHEME_FAMILY = {
    "postgresql": "postgresql",
    "postgres": "postgresql",
    "mysql": "mysql",
    "mariadb": "mysql",
    "redis": "redis",
    "rediss": "redis",
}


def _check_query_options(parts: SplitResult) -> None:
    family = _SCHEME_FAMILY.get(parts.scheme.lower())
    if family is None or not parts.query:
        return
    names = {unquote(pair.partition("=")[0]) for pair in parts.query.split("&")}
    refused = sorted(names - _DATABASE_QUERY_OPTIONS[family])
    if refused:
        allowed = ", ".join(sorted(_DATABASE_QUERY_OPTIONS[family]))
        raise TargetError(f"Unsupported option {refused[0]!r} in the query; allowed: {allowed}.")


def _check_libpq_agrees(target: str, parts: SplitResult) -> None:
    """libpq, which the PostgreSQL probe uses, must read the same host, port and user."""
    try:
        info = conninfo.conninfo_to_dict(target)
    except psycopg.Error as exc:
        raise TargetError("PostgreSQL cannot read this connection URL.") from exc
    seen = (str(info.get("host", "")).lower(), str(info.get("port", "")), info.get("user"))
    meant = (
        (parts.hostname or "").lower(),
        str(parts.port or ""),
        unquote(parts.username) if parts.username is not None else None,
    )
    if seen != meant:
        raise TargetError("PostgreSQL would read another host, port or user from this URL.")


# Schemes whose target is only a host and port: what a valid one looks like.
_BARE_SCHEMES = {
    "grpc": "A gRPC target is grpc://host:port",
    "grpcs": "A gRPC target is grpc://host:port",
    "tcp": "A TCP target is tcp://host:port",
    "tls": "A TLS target is tls://host:port",
    "smtp": "An SMTP target is smtp://host[:port] (port 25 if none)",
    "smtps": "An SMTPS target is smtps://host[:port] (port 465 if none)",
}


def _check_scheme_rules(target: str, parts: SplitResult) -> None:
    scheme = parts.scheme.lower()
    _check_query_options(parts)
    if scheme in ("postgresql", "postgres"):
        _check_libpq_agrees(target, parts)
    if scheme in _BARE_SCHEMES:
        _check_port(parts.port, required=scheme in ("grpc", "grpcs", "tcp", "tls"))
        if parts.path not in ("", "/") or parts.query or parts.username is not None:
            raise TargetError(f"{_BARE_SCHEMES[scheme]}, with nothing after the port.")
    elif scheme in ("redis", "rediss") and not re.fullmatch(r"/?\d{0,2}", parts.path):
        raise TargetError("A Redis target's path is the database number, as in /0.")
    elif scheme == "icmp":
        _check_icmp(parts)
    elif scheme == "dns":
        dns_query(target)


def _check_icmp(parts: SplitResult) -> None:
    if parts.port is not None or parts.path not in ("", "/") or parts.query:
        raise TargetError("An ICMP target is icmp://host, with no port, path or query.")
    if parts.username is not None:
        raise TargetError("An ICMP target takes no user name or password.")


def dns_query(target: str) -> tuple[str | None, int, str]:
    """A valid `dns://` target's resolver (None: the system's), its port and the name asked
    for: `dns://name` or `dns://resolver[:port]/name`."""
    parts = urlsplit(target)
    if parts.username is not None or parts.query:
        raise TargetError("A DNS target takes no user name, password or query.")
    name = parts.path.removeprefix("/")
    if not name:
        if parts.port is not None:
            raise TargetError("A port goes with a resolver, as in dns://resolver:port/name.")
        return None, 53, parts.netloc
    if "/" in name or len(name) > 253 or not _HOSTNAME.fullmatch(name):
        raise TargetError("The name to look up is not a valid DNS name.")
    return parts.hostname, parts.port or 53, name


def validate_target(endpoint_type: str, target: str) -> str:
    """Check that a target fits the endpoint type; returns it with a lowercase scheme."""
    _check_characters(target)
    if "://" not in target:
        if endpoint_type == EndpointType.CUSTOM:
            _check_host_port(target)
            return target
        raise TargetError(f"Use a URL starting with {_schemes_text(endpoint_type)}.")
    scheme, rest = target.split("://", 1)
    if scheme.lower() not in SCHEMES[endpoint_type]:
        raise TargetError(
            f"A {endpoint_type} target must start with {_schemes_text(endpoint_type)}."
        )
    target = f"{scheme.lower()}://{rest}"
    _check_scheme_rules(target, _split(target))
    return target


def _schemes_text(endpoint_type: str) -> str:
    return " or ".join(f"{scheme}://" for scheme in SCHEMES[endpoint_type])


def _rebuild(parts: SplitResult, netloc: str, query: str) -> str:
    url = f"{parts.scheme}://{netloc}{parts.path}"
    if query:
        url += f"?{query}"
    if parts.fragment:
        url += f"#{parts.fragment}"
    return url


def _mask_query(query: str) -> str:
    pairs = []
    for pair in query.split("&"):
        name, sep, value = pair.partition("=")
        if sep and value and is_secret_name(unquote(name)):
            value = MASK
        pairs.append(f"{name}{sep}{value}")
    return "&".join(pairs)


def mask_target(target: str) -> str:
    """The target with its password and secret query parameters replaced by `****`."""
    if "://" not in target:
        return target
    parts = urlsplit(target)
    userinfo, at, hostport = parts.netloc.rpartition("@")
    if at and ":" in userinfo:
        userinfo = f"{userinfo.split(':', 1)[0]}:{MASK}"
    elif at and parts.scheme.lower() not in _ACCOUNT_USER_SCHEMES:
        userinfo = MASK  # a lone user name in a web URL is a token (https://ghp_...@host)
    netloc = f"{userinfo}{at}{hostport}"
    return _rebuild(parts, netloc, _mask_query(parts.query))


def same_destination(new: str, old: str) -> bool:
    """Whether two valid targets reach the same service as the same user.

    The scheme, user, host and port must match; the path and the query may differ (a
    database target's query holds only options that cannot redirect it: see above).
    """
    if "://" not in new or "://" not in old:
        return new == old
    new_parts, old_parts = urlsplit(mask_target(new)), urlsplit(mask_target(old))
    return (new_parts.scheme, new_parts.netloc) == (old_parts.scheme, old_parts.netloc)


def restore_target_secrets(new: str, old: str) -> str:
    """Put back the stored secrets that a client sent back masked (`****`) in a valid target.

    Only while the destination stays the same: otherwise anyone allowed to edit an endpoint
    could send its stored password to a server of their choosing.
    """
    if MASK not in new or "://" not in new:
        return new
    if not same_destination(new, old):
        raise TargetError(
            "Enter the password again: a masked secret is kept only while the scheme, user, "
            "host and port stay the same."
        )
    parts, old_parts = urlsplit(new), urlsplit(old)
    userinfo, at, hostport = parts.netloc.rpartition("@")
    if MASK in userinfo:  # the destinations match once masked, so the old one has secrets
        userinfo = old_parts.netloc.rpartition("@")[0]
    old_values = dict(pair.partition("=")[::2] for pair in old_parts.query.split("&"))
    pairs = []
    for pair in parts.query.split("&") if parts.query else []:
        name, sep, value = pair.partition("=")
        if value == MASK:
            if old_values.get(name) in (None, MASK):
                raise TargetError(f"No value is stored for {unquote(name)!r}: enter it.")
            value = old_values[name]
        pairs.append(f"{name}{sep}{value}")
    return _rebuild(parts, f"{userinfo}{at}{hostport}", "&".join(pairs))


def has_secrets(config: Any) -> bool:
    """Whether a config document holds secret values (such as an Authorization header)."""
    return bool(mask_config(config) != config)


def mask_config(config: Any) -> Any:
    """A config document with the values of secret-named keys (headers too) masked."""
    if isinstance(config, dict):
        return {
            key: MASK if is_secret_name(key) and isinstance(value, str) else mask_config(value)
            for key, value in config.items()
        }
    if isinstance(config, list):
        return [mask_config(item) for item in config]
    return config


def restore_config_secrets(new: Any, old: Any) -> Any:
    """Put back stored secret values that a client sent back masked in a config document."""
    if isinstance(new, dict):
        old = old if isinstance(old, dict) else {}
        restored = {}
        for key, value in new.items():
            if value == MASK and is_secret_name(key):
                if not isinstance(old.get(key), str):
                    raise TargetError(f"`{key}` is masked but no value is stored: enter it.")
                value = old[key]
            restored[key] = restore_config_secrets(value, old.get(key))
        return restored
    if isinstance(new, list):
        old = old if isinstance(old, list) else []
        return [
            restore_config_secrets(item, old[i] if i < len(old) else None)
            for i, item in enumerate(new)
        ]
    return new
