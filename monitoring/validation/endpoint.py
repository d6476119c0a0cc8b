"""The rules that tie an endpoint's fields together: the target fits the type
(`monitoring.targets`), the timeout stays below the interval, heartbeats take no target, and
secrets sent back masked are restored only for the service they belong to."""

import json
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from healthmon.errors import FieldErrors, InvalidInput
from monitoring.heartbeats import (
    NO_TARGET,
    THRESHOLD_ONE,
    heartbeat_errors,
)
from monitoring.models import (
    MAX_HEARTBEAT_SECONDS,
    MAX_INTERVAL_SECONDS,
    MAX_THRESHOLD,
    MAX_TIMEOUT_SECONDS,
    Endpoint,
    EndpointType,
)
from monitoring.slugs import slug_errors
from monitoring.targets import (
    MASK,
    MAX_TARGET_LENGTH,
    TargetError,
    has_secrets,
    restore_config_secrets,
    restore_target_secrets,
    same_destination,
    validate_target,
)
from monitoring.validation.kinds import option_names, validate_config
from monitoring.validation.locations import locations_errors, quorum_error
from monitoring.validation.options import REQUIRED

DEFAULT_INTERVAL = 60
DEFAULT_TIMEOUT = 10
MAX_NAME_LENGTH = 200

# --- An endpoint's fields, alone and together -----------------------------------------------


def endpoint_limits() -> dict[str, dict[str, int]]:
    """The bounds of an endpoint's fields (`min`, `max`, `maxlength`): the API's fields, its
    schema and the page form's HTML attributes are built from these."""
    return {
        "name": {"maxlength": MAX_NAME_LENGTH},
        "target": {"maxlength": MAX_TARGET_LENGTH},
        # A heartbeat's period may be a year; probed endpoints are held to a day apart.
        "interval_seconds": {"min": settings.MIN_CHECK_INTERVAL, "max": MAX_HEARTBEAT_SECONDS},
        "timeout_seconds": {"min": 1, "max": MAX_TIMEOUT_SECONDS},
        "failure_threshold": {"min": 1, "max": MAX_THRESHOLD},
        "recovery_threshold": {"min": 1, "max": MAX_THRESHOLD},
    }


@dataclass
class _Check:
    """An endpoint's values being checked: those given, the endpoint they change (None on
    creation), the fields already refused on their own, and the errors found so far."""

    values: dict[str, Any]
    current: Endpoint | None
    failed: frozenset[str] = frozenset()
    errors: FieldErrors = field(default_factory=dict)

    def given(self, name: str) -> bool:
        return name in self.values

    def value(self, name: str) -> Any:
        """The value given, else the endpoint's current one."""
        if name in self.values or self.current is None:
            return self.values.get(name)
        return getattr(self.current, name)


def endpoint_validate(
    values: Mapping[str, Any], *, current: Endpoint | None, failed: Collection[str] = ()
) -> dict[str, Any]:
    """Check an endpoint's interval, timeout, target and config against each other and the
    type, for a new endpoint (`current` None) or a change to `current`.

    `values` are the fields given, each already of its type (an integer, a choice); `failed`
    names fields refused on their own (absent from `values`): the rules that need one of
    them are skipped, the others still run, so one answer names every bad field. Returns
    the values with the target normalised, secrets sent back masked restored, the config's
    defaults filled in and, for a new endpoint without one, the derived timeout
    (`default_timeout`); raises InvalidInput naming every bad field (a config's options as
    `config.<option>`).
    """
    check = _Check(dict(values), current, frozenset(failed))
    heartbeat = _check_heartbeat(check)
    _check_slug(check, heartbeat=heartbeat)
    if heartbeat:
        pass  # a heartbeat has no target to check, and a refused one no config either
    elif "type" in check.failed:
        pass  # neither the target nor the options can be judged without the type
    elif "target" in check.failed:
        _check_config_alone(check, check.value("type"))
    else:
        _check_target_and_config(check, check.value("type"))
    _check_locations(check, heartbeat=heartbeat)
    if check.errors:
        raise InvalidInput(check.errors)
    return check.values


def _check_heartbeat(check: _Check) -> bool:
    """Apply a heartbeat's rules (`monitoring.heartbeats`); whether the endpoint is one
    (or is refused for becoming or leaving one), so that the probe rules do not apply."""
    current_type = check.current.type if check.current else None
    if "type" in check.failed or EndpointType.HEARTBEAT not in (current_type, check.value("type")):
        _check_timing(check)
        if check.current is None and not check.given("target") and "target" not in check.failed:
            check.errors["target"] = [REQUIRED]  # only heartbeats go without
            check.failed = check.failed | {"target"}
        return False
    failed = "interval_seconds" in check.failed
    interval = None if failed else int(check.value("interval_seconds") or 0)
    errors = heartbeat_errors(check.values, current_type=current_type, interval=interval)
    check.errors.update(errors)
    if "interval_seconds" not in errors:
        _check_timing(check, heartbeat=True)
    if check.current is None and "target" not in errors:
        check.values["target"] = NO_TARGET
    # A failure ping opens an incident at once and one success ends it: the thresholds are 1
    # (set on creation, where the API fills in its defaults; refused otherwise on a change).
    for name in ("failure_threshold", "recovery_threshold"):
        if check.current is None:
            check.values[name] = 1
        elif check.given(name) and check.values[name] != 1:
            check.errors[name] = [THRESHOLD_ONE]
    if "type" not in errors:
        _check_config(check, EndpointType.HEARTBEAT)
    return True


def _check_slug(check: _Check, *, heartbeat: bool) -> None:
    """A slug given, or kept while the endpoint moves to another project, must be free there."""
    if check.failed & {"slug", "type"} or not (check.given("slug") or check.given("project")):
        return
    project = None if "project" in check.failed else check.value("project")
    check.errors.update(
        slug_errors(
            check.value("slug"),
            heartbeat=heartbeat,
            project_id=getattr(project, "pk", None),
            endpoint_id=check.current.pk if check.current else None,
        )
    )


def _check_locations(check: _Check, *, heartbeat: bool) -> None:
    """The locations must be defined, each once (none for a heartbeat, including one that
    keeps its old locations while becoming one); a number as the quorum must not exceed
    them, checked again when either changes."""
    if "locations" in check.failed:
        return
    slugs = list(check.value("locations") or [])
    judged = check.given("locations") or (heartbeat and slugs and "type" not in check.failed)
    if judged and (errors := locations_errors(slugs, heartbeat=heartbeat)):
        check.errors["locations"] = errors
        return
    config_changed = any(check.given(name) for name in ("config", "type", "target"))
    if heartbeat or not (check.given("locations") or config_changed):
        return
    if "config" in check.failed or any(key.startswith("config") for key in check.errors):
        return
    config = check.values.get("config", check.current.config if check.current else {})
    if error := quorum_error((config or {}).get("quorum"), slugs):
        check.errors["config.quorum"] = [error]


def _check_target_and_config(check: _Check, endpoint_type: str) -> None:
    try:
        if check.given("target") or check.given("type"):
            check.values["target"] = _target(check, endpoint_type)
    except TargetError as exc:
        check.errors["target"] = [str(exc)]
        _check_config_alone(check, endpoint_type)
    else:
        _check_config(check, endpoint_type)


def default_timeout(interval: int) -> int:
    """The timeout of a new endpoint created without one: DEFAULT_TIMEOUT, or one second
    less than a shorter interval (the API's schema and the README say so)."""
    return min(DEFAULT_TIMEOUT, interval - 1)


def timeout_too_long(interval: int) -> str:
    """The refusal of a timeout that is not below the interval."""
    return f"Must be less than the interval ({interval} s)."


def _check_timing(check: _Check, *, heartbeat: bool = False) -> None:
    if "interval_seconds" in check.failed:
        return
    interval = int(check.value("interval_seconds") or 0)
    if not heartbeat and check.given("interval_seconds"):
        if interval < settings.MIN_CHECK_INTERVAL:
            check.errors["interval_seconds"] = [
                f"Ensure this value is greater than or equal to {settings.MIN_CHECK_INTERVAL}."
            ]
            return
        if interval > MAX_INTERVAL_SECONDS:  # the API's field allows a heartbeat's year
            check.errors["interval_seconds"] = [
                f"Ensure this value is less than or equal to {MAX_INTERVAL_SECONDS}."
            ]
            return
    if check.current is None and not check.given("timeout_seconds"):
        if "timeout_seconds" not in check.failed:
            check.values["timeout_seconds"] = default_timeout(interval)
        return
    if "timeout_seconds" in check.failed:
        return
    if int(check.value("timeout_seconds") or 0) >= interval:
        check.errors["timeout_seconds"] = [timeout_too_long(interval)]


def _target(check: _Check, endpoint_type: str) -> str:
    """The new target, checked against the type, with secrets sent back masked restored."""
    target = validate_target(endpoint_type, str(check.value("target")))
    if check.current is None or not check.given("target"):
        return target
    return restore_target_secrets(target, check.current.target)


def _check_config(check: _Check, endpoint_type: str) -> None:
    if "config" in check.failed:
        return
    if not any(check.given(name) for name in ("config", "type", "target")) and check.current:
        return
    _validate_config_into(check, endpoint_type, lambda: _config(check), keep=True)


def _check_config_alone(check: _Check, endpoint_type: str) -> None:
    """Check a config given beside a bad target, so that one answer names both; its masked
    secrets cannot be restored without a valid target, and nothing is kept."""
    if check.given("config"):
        _validate_config_into(check, endpoint_type, lambda: check.values["config"], keep=False)


def _validate_config_into(
    check: _Check, endpoint_type: str, config: Callable[[], Any], *, keep: bool
) -> None:
    """Validate a config (restoring its masked secrets may fail too), recording its errors
    under `config`; keep the result if asked."""
    try:
        validated = validate_config(endpoint_type, config())
    except TargetError as exc:
        check.errors["config"] = [str(exc)]
    except InvalidInput as exc:
        check.errors.update(exc.nested("config").errors)
    else:
        if keep:
            check.values["config"] = validated


def _config(check: _Check) -> Any:
    """The new config, with secrets sent back masked restored.

    Stored secrets (an Authorization header, say) stay with their service: when the
    target points elsewhere, they must be sent again, never carried along.
    """
    current = check.current
    if current is None:
        return check.values.get("config", {})
    old: Any = current.config
    moved = not same_destination(check.value("target"), current.target)
    if not check.given("config"):  # a new type keeps the options it shares with the old one
        known = option_names(check.value("type"))
        kept = {name: value for name, value in old.items() if name in known}
        if moved and has_secrets(kept):
            raise TargetError(
                "The stored options hold secrets for the old target: send `config` again "
                "with the target."
            )
        return kept
    if moved and MASK in json.dumps(check.values["config"]):
        raise TargetError("Enter the secret values again: the target points elsewhere now.")
    return restore_config_secrets(check.values["config"], old)
