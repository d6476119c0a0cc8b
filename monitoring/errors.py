"""The monitoring app's refusals that the shared codes do not name, as plain domain
exceptions (no HTTP framework)."""

from enum import StrEnum

from healthmon.errors import DomainError


class MonitoringErrorCode(StrEnum):
    """Codes the monitoring app adds to `healthmon.errors.ErrorCode`."""

    INCIDENT_RESOLVED = "incident_resolved"


class IncidentResolved(DomainError):
    """A resolved incident cannot be acknowledged: there is nothing left to look at."""

    status = 409
    code = MonitoringErrorCode.INCIDENT_RESOLVED
    title = "Incident resolved"
    default_detail = "The incident is resolved: there is nothing to acknowledge."
