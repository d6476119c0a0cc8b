"""The certificate options of every TLS-using kind: when to warn of an expiring certificate,
and a private CA to trust."""

import re
import ssl
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from cryptography import x509

from healthmon.errors import FieldErrors, InvalidInput
from monitoring.validation.options import Option

DEFAULT_EXPIRY_DAYS: tuple[int | str, ...] = (30, 14, 7, 1)
MAX_THRESHOLDS = 10
MAX_DAYS = 3650
MAX_CA_LENGTH = 50_000
_SHARE = re.compile(r"(\d{1,2}(?:\.\d{1,2})?)\s*%")


def _threshold(value: Any) -> int | str:
    """Days (a whole number) or a share of the lifetime (`"20%"`)."""
    if isinstance(value, str) and "%" in value:
        match = _SHARE.fullmatch(value.strip())
        if match is None or not 0 < float(match[1]) < 100:
            raise InvalidInput("A share of the lifetime is a percentage above 0 and below 100.")
        return f"{float(match[1]):g}%"
    if isinstance(value, bool) or not isinstance(value, int | str | float):
        raise InvalidInput('Days (a whole number) or a share of the lifetime ("20%").')
    try:
        days = int(str(value).strip().removesuffix(".0"))
    except ValueError as exc:
        raise InvalidInput('Days (a whole number) or a share of the lifetime ("20%").') from exc
    if not 1 <= days <= MAX_DAYS:
        raise InvalidInput(f"Days between 1 and {MAX_DAYS}.")
    return days


@dataclass(frozen=True, kw_only=True)
class ExpiryThresholds(Option):
    """When to warn before a certificate expires: days, or shares of its lifetime."""

    default: Any = lambda: list(DEFAULT_EXPIRY_DAYS)

    def parse(self, value: Any) -> list[int | str]:
        """The thresholds as given; a bad one is named by its index (`[1]`)."""
        if isinstance(value, str | dict) or not isinstance(value, list | tuple):
            raise InvalidInput(f'Expected a list of items but got type "{type(value).__name__}".')
        if len(value) > MAX_THRESHOLDS:
            raise InvalidInput(f"Ensure this field has no more than {MAX_THRESHOLDS} elements.")
        thresholds: list[int | str] = []
        errors: FieldErrors = {}
        for index, item in enumerate(value):
            try:
                thresholds.append(_threshold(item))
            except InvalidInput as exc:
                errors.update(exc.nested(f"[{index}]").errors)
        if errors:
            raise InvalidInput(errors)
        return list(dict.fromkeys(thresholds))


def threshold_span(threshold: int | str, lifetime: timedelta) -> timedelta:
    """How long before expiry a threshold is crossed, for a certificate of this lifetime."""
    if isinstance(threshold, str):
        return lifetime * float(threshold.removesuffix("%")) / 100
    return timedelta(days=threshold)


@dataclass(frozen=True, kw_only=True)
class CACertificate(Option):
    """A PEM CA certificate (or several) to trust besides the system's CAs."""

    default: Any = str

    def parse(self, value: Any) -> str:
        """The PEM text, once every certificate in it reads as a CA's."""
        if not isinstance(value, str):
            raise InvalidInput("Not a valid string.")
        text = value.strip()
        if not text:
            return ""
        if len(text) > MAX_CA_LENGTH:
            raise InvalidInput(f"Ensure this field has no more than {MAX_CA_LENGTH} characters.")
        try:
            certificates = x509.load_pem_x509_certificates(text.encode())
            ssl.create_default_context(cadata=text)  # OpenSSL must read it as well
        except (ValueError, ssl.SSLError, UnicodeEncodeError) as exc:
            raise InvalidInput("Not a PEM certificate.") from exc
        for certificate in certificates:
            try:
                constraints = certificate.extensions.get_extension_for_class(x509.BasicConstraints)
            except x509.ExtensionNotFound:
                constraints = None
            if constraints is None or not constraints.value.ca:
                raise InvalidInput("Not a CA certificate (its basic constraints say CA:FALSE).")
        return text
