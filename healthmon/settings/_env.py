"""Reading the environment: the readers every settings module uses, and where the product
lives and writes."""

import ipaddress
import re
from datetime import timedelta
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent.parent

env = environ.Env()
if (BASE_DIR / ".env").is_file():
    environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

# Where the product writes at run time, apart from the database: the filesystem broker of
# `make run` and the file email backend. The code directory may be read-only in production,
# so this is configurable; with Redis and SMTP nothing is written at all (beat keeps its
# schedule in memory, see CELERY_BEAT_SCHEDULER).
STATE_DIR = Path(env.str("STATE_DIR", default="") or BASE_DIR / "var").resolve()

_DURATION = re.compile(r"^\s*(\d+)\s*([smhd]?)\s*$")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def _duration(name: str, default: timedelta) -> timedelta:
    """Read a duration given in seconds or with a unit suffix (`90`, `15m`, `12h`, `7d`)."""
    raw = env.str(name, default="")
    if not raw:
        return default
    match = _DURATION.match(raw)
    if not match or int(match.group(1)) == 0:
        raise ImproperlyConfigured(
            f"{name}={raw!r} is not a positive duration: use seconds or a number with s, m, h or d."
        )
    return timedelta(seconds=int(match.group(1)) * _UNIT_SECONDS[match.group(2)])


def _bool(name: str, default: bool) -> bool:
    """Read a boolean, refusing values that are neither true nor false."""
    raw = env.str(name, default="").strip().lower()
    if not raw:
        return default
    if raw in {"1", "true", "yes", "on"}:
        return True
    if raw in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean: use true or false.")


def _int_between(name: str, default: int, low: int, high: int) -> int:
    """Read an integer, refusing values outside [low, high]."""
    try:
        value = env.int(name, default=default)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be a whole number.") from exc
    if not low <= value <= high:
        raise ImproperlyConfigured(f"{name} must be between {low} and {high}.")
    return value


def _networks(name: str) -> list[str]:
    """Read a comma-separated list of CIDR networks."""
    networks = env.list(name, default=[])
    for network in networks:
        try:
            ipaddress.ip_network(network, strict=False)
        except ValueError as exc:
            raise ImproperlyConfigured(f"{name}: {network!r} is not an IP network.") from exc
    return networks
