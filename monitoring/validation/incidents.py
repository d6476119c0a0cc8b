"""What a person may write on an incident: the bounds of its texts, and which update
statuses an incident takes in the state it is in.

The API's serializers call `update_status_check` to name a refused status beside the other
bad fields; the service calls it again under the incident's lock, where it is the rule.
"""

from healthmon.errors import InvalidInput
from monitoring.models import Incident, IncidentKind, IncidentState

MAX_TITLE_LENGTH = 200
MAX_TEXT_LENGTH = 10_000
MAX_DECLARED_ENDPOINTS = 100

AUTOMATIC_RESOLVES_ITSELF = (
    "An automatic incident is resolved by its endpoint's checks once they recover; "
    "post `monitoring` until then."
)
RESOLVED_STAYS_RESOLVED = (
    "The incident is resolved: a later update (a postmortem) is `resolved` too. Declare a "
    "new incident for a new outage."
)


def update_status_check(incident: Incident, status: str) -> None:
    """Refuse, on `status`, an update status the incident cannot take now.

    A resolved incident takes `resolved` updates only: they add a word (a postmortem)
    without reopening it. An open automatic incident never takes `resolved`: its checks
    decide when it ends, and a status page must not call an outage over while the
    endpoint is still down.
    """
    resolved = incident.resolved_at is not None
    if resolved and status != IncidentState.RESOLVED:
        raise InvalidInput({"status": [RESOLVED_STAYS_RESOLVED]})
    if (
        not resolved
        and incident.kind == IncidentKind.AUTOMATIC
        and status == IncidentState.RESOLVED
    ):
        raise InvalidInput({"status": [AUTOMATIC_RESOLVES_ITSELF]})


def allowed_statuses(incident: Incident) -> list[str]:
    """The update statuses the incident takes now, in their order (for a form's choices)."""
    allowed = []
    for status in IncidentState.values:
        try:
            update_status_check(incident, status)
        except InvalidInput:
            continue
        allowed.append(status)
    return allowed
