"""Apprise channels: any of Apprise's 100+ services (Telegram, ntfy, PagerDuty, ...) named by
one URL, read by Apprise's own parser and sent by its plugins.

The network policy holds as for webhooks, as far as Apprise lets it be seen: a plugin whose
URL names the host it connects to (a self-hosted ntfy, Mattermost, Gotify, SMTP server, a
`json://` receiver) is refused when that host is written as an address the policy forbids,
and at each send every address the host resolves to must be allowed. Apprise dials by
itself, so a name that resolves differently between that check and its connection (DNS
rebinding) is not caught; services at a fixed public API host (Telegram, Pushover) have
no host to check. Plugins that notify the server itself (desktop, syslog) are refused.

An Apprise URL holds its service's credentials: it is shown as Apprise's privacy form
(tokens and passwords masked) without its query, and Apprise's log lines, which may quote
it, never reach a log handler: a filter on Apprise's logger drops every line, keeping those
of a send, scrubbed, as the attempt's error.
"""

import logging
import re
import socket
import threading
import time
import warnings
from collections.abc import Callable
from functools import cache
from urllib.parse import unquote, urlsplit

import apprise
from apprise.manager_plugins import NotificationManager

from alerts import messages
from alerts.models import NotificationEvent
from alerts.transport import MAX_ERROR_LENGTH, PRIVATE_REFUSED, Sent, host_refused
from monitoring.probes.network import NOT_ALLOWED, address_allowed
from monitoring.probes.secrets import scrub
from monitoring.targets import MASK

UNKNOWN_SCHEME = 'Apprise knows no service "{scheme}://".'
MALFORMED = "Apprise cannot read this URL: check it against the service's URL format."
NO_SCHEME = "An Apprise URL starts with its service, as in ntfy://ntfy.sh/topic."
NOT_INSTALLED = 'Apprise cannot send to "{scheme}://" here: a package it needs is missing.'
LOCAL_REFUSED = "This Apprise service notifies the server itself, not a person."
# Plugins that notify the machine they run on (its desktop, its syslog, a USB light).
LOCAL_SCHEMES = frozenset(
    {"dbus", "kde", "qt", "glib", "gio", "gnome", "macosx", "windows", "syslog", "blink1"}
)
# Generic receivers whose path Apprise shows in its privacy form; it may be a credential.
GENERIC_SCHEMES = frozenset({"json", "jsons", "form", "forms", "xml", "xmls"})
_SCHEME = re.compile(r"^([a-z][a-z0-9+.-]*)://", re.IGNORECASE)
_URL_PARTS = re.compile(r"[/:@?&=#,;+\s]+")
MIN_SECRET = 4
# A send's whole time, retries and several targets included: inside the task's 50 s limit.
MAX_SEND_SECONDS = 40.0
LOGGER = "apprise"

NOTIFY_TYPES: dict[str, apprise.NotifyType] = {
    NotificationEvent.OPENED: apprise.NotifyType.FAILURE,
    NotificationEvent.ESCALATED: apprise.NotifyType.FAILURE,
    NotificationEvent.HEARTBEAT_LATE: apprise.NotifyType.FAILURE,
    NotificationEvent.DEGRADED: apprise.NotifyType.WARNING,
    NotificationEvent.CERTIFICATE_EXPIRING: apprise.NotifyType.WARNING,
    NotificationEvent.RESOLVED: apprise.NotifyType.SUCCESS,
    NotificationEvent.RECOVERED: apprise.NotifyType.SUCCESS,
    NotificationEvent.ACKNOWLEDGED: apprise.NotifyType.INFO,
}


@cache
def _plugins() -> NotificationManager:
    """Apprise's plugins, loaded once per process. One of them imports `imghdr`, which
    warns of its removal in Python 3.13 (Apprise ships a stand-in for then): not ours."""
    manager = NotificationManager()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "'imghdr' is deprecated", DeprecationWarning)
        manager.load_modules()
    return manager


def apprise_plugin(url: str) -> apprise.NotifyBase:
    """Apprise's plugin for a URL; a ValueError says why there is none."""
    found = _SCHEME.match(url)
    if found is None:
        raise ValueError(NO_SCHEME)
    scheme = found[1].lower()
    if scheme not in _plugins():
        raise ValueError(UNKNOWN_SCHEME.format(scheme=scheme))
    if scheme in LOCAL_SCHEMES:
        raise ValueError(LOCAL_REFUSED)
    if not getattr(_plugins()[scheme], "enabled", True):
        raise ValueError(NOT_INSTALLED.format(scheme=scheme))
    plugin = apprise.Apprise.instantiate(url, suppress_exceptions=True)
    if plugin is None:
        raise ValueError(MALFORMED)
    return plugin


def plugin_hosts(plugin: apprise.NotifyBase) -> list[str]:
    """The hosts the plugin's URL names and it connects to (none for a fixed API host)."""
    hosts = []
    if "host" in getattr(plugin, "template_tokens", {}) and plugin.host:
        hosts.append(str(plugin.host))
    smtp_host = getattr(plugin, "smtp_host", "")
    if smtp_host:
        hosts.append(str(smtp_host))
    return [host.strip("[]") for host in dict.fromkeys(hosts)]


def checked_apprise_url(url: str) -> str:
    """An Apprise URL Apprise can send to, whose host (where it names one) is no address
    the network policy forbids; a ValueError says what is wrong."""
    plugin = apprise_plugin(url)
    if any(host_refused(host) for host in plugin_hosts(plugin)):
        raise ValueError(PRIVATE_REFUSED)
    return url


def masked_apprise_url(url: str) -> str:
    """The URL as shown: Apprise's privacy form without its query (a generic receiver's
    path masked too); a URL Apprise cannot read shows its scheme only."""
    try:
        shown = str(apprise_plugin(url).url(privacy=True))
    except ValueError:
        found = _SCHEME.match(url)
        return f"{found[1] if found else 'apprise'}://{MASK}"
    parts = urlsplit(shown)
    if parts.scheme in GENERIC_SCHEMES and parts.path not in ("", "/"):
        return f"{parts.scheme}://{parts.netloc}/{MASK}"
    room = parts.fragment.partition("?")[0].rstrip("/")  # Rocket.Chat's #channel
    return f"{parts.scheme}://{parts.netloc}{parts.path}" + (f"#{room}" if room else "")


def url_secrets(url: str) -> list[str]:
    """The pieces of a URL its masked form does not show: every one may be a credential."""
    shown = masked_apprise_url(url)
    pieces = set(_URL_PARTS.split(url.partition("://")[2]))
    pieces |= {unquote(piece) for piece in pieces}
    found = {piece for piece in pieces if len(piece) >= MIN_SECRET and piece not in shown}
    return sorted(found | {url}, key=len, reverse=True)


def apprise_send(url: str, document: messages.EventDocument, timeout: float) -> Sent:
    """Send one event through Apprise: title the headline, body the lines under it (the
    mail body's), its type by event; a failure's error quotes no secret of the URL."""
    started = time.perf_counter()
    try:
        plugin = apprise_plugin(url)
    except ValueError as exc:
        return Sent(False, None, str(exc), 0.0)
    refused = _policy_refusal(plugin_hosts(plugin))
    if refused:
        return Sent(False, None, refused, _ms(started))
    plugin.socket_connect_timeout = plugin.socket_read_timeout = timeout
    notify_type = NOTIFY_TYPES.get(document["event"], apprise.NotifyType.INFO)
    body = "\n".join(messages.details(document))

    def notify() -> bool:
        return bool(
            plugin.notify(body=body, title=messages.headline(document), notify_type=notify_type)
        )

    ok, lines = _run_captured(notify, deadline=min(timeout * 2 + 1, MAX_SEND_SECONDS))
    if ok:
        return Sent(True, None, "", _ms(started))
    return Sent(False, None, _error(plugin, url, lines), _ms(started))


def _policy_refusal(hosts: list[str]) -> str:
    """Why the policy refuses the hosts ("" when it allows every address they resolve to)."""
    for host in hosts:
        try:
            infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            return "connection failed: cannot resolve the host"
        if not infos or not all(address_allowed(str(info[4][0])) for info in infos):
            return f"{NOT_ALLOWED} (network policy)"
    return ""


class _AppriseLines(logging.Filter):
    """Apprise's log lines may quote a URL: none reaches a handler (any handler's, tests'
    too). Those of a send, WARNING and above, are kept for its error, to be scrubbed."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Keep the message for the send running in this thread; let no record through."""
        lines = getattr(_capture, "lines", None)
        if lines is not None and record.levelno >= logging.WARNING:
            lines.append(record.getMessage())
        return False


_capture = threading.local()
_FILTER = _AppriseLines()
logging.getLogger(LOGGER).addFilter(_FILTER)  # one Filter object: adding it again is a no-op


def _run_captured(notify: Callable[[], bool], *, deadline: float) -> tuple[bool, list[str]]:
    """Run a notify in a thread, at most `deadline` seconds, with what Apprise logged."""
    outcome: dict[str, bool] = {}
    lines: list[str] = []

    def run() -> None:
        _capture.lines = lines
        try:
            outcome["ok"] = notify()
        except Exception as exc:  # a plugin's bug is a failed attempt, not a crash
            lines.append(f"internal error ({type(exc).__name__})")
        finally:
            _capture.lines = None

    worker = threading.Thread(target=run, name="apprise-notify", daemon=True)
    worker.start()
    worker.join(deadline)
    if worker.is_alive():
        return False, [*lines, "timed out"]
    return outcome.get("ok", False), list(lines)


def _error(plugin: apprise.NotifyBase, url: str, lines: list[str]) -> str:
    """The attempt's error: Apprise's own words with the URL's secrets masked."""
    said = lines[-1] if lines else "the service did not take the notification"
    if lines and lines[-1] == "timed out":
        said = "timed out"
    elif len(lines) > 1 and lines[-1].lower().startswith("response details"):
        said = lines[-2]
    text = scrub(said, url_secrets(url))
    return f"{plugin.service_name}: {text}"[:MAX_ERROR_LENGTH]


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
