"""What checks write in monitoring: the probing of a batch (`probe`), its results stored once
per slot (`store`), and the streaks, statuses and incidents they move (`advance`).

These are monitoring's stages of the check pipeline; `pipeline.checks` runs them in order, in
one transaction, with the stages of the layers above (rollups, notifications) between them.
"""

from monitoring.checks.advance import Transitions, incidents_advance
from monitoring.checks.outcome import ROUND_LOCATION, CheckOutcome
from monitoring.checks.probe import checks_probe
from monitoring.checks.store import Stored, checks_insert, checks_store, endpoints_lock

__all__ = [
    "ROUND_LOCATION",
    "CheckOutcome",
    "Stored",
    "Transitions",
    "checks_insert",
    "checks_probe",
    "checks_store",
    "endpoints_lock",
    "incidents_advance",
]
