"""Where an endpoint is probed from (`locations`, slugs of defined locations) and how many of
them must fail for a round to fail (`config.quorum`), checked together: a number above the
endpoint's locations could never be reached, so it is refused rather than capped silently.
"""

from collections.abc import Sequence
from typing import Any

from monitoring.locations import known_slugs

# More places than this per endpoint multiplies every round's work for little more certainty.
MAX_ENDPOINT_LOCATIONS = 10
NO_HEARTBEAT_LOCATIONS = "A heartbeat is not probed: it takes no locations (send [])."


def locations_errors(slugs: Sequence[str], *, heartbeat: bool) -> list[str]:
    """What is wrong with an endpoint's list of location slugs (empty: nothing); the unknown
    ones are named, so the caller can tell which to define or drop."""
    if heartbeat and slugs:
        return [NO_HEARTBEAT_LOCATIONS]
    if len(slugs) > MAX_ENDPOINT_LOCATIONS:
        return [f"Ensure this field has no more than {MAX_ENDPOINT_LOCATIONS} elements."]
    errors = []
    repeated = sorted({slug for slug in slugs if slugs.count(slug) > 1})
    if repeated:
        errors.append(f"Each location once: {', '.join(repeated)} given more than once.")
    unknown = sorted(set(slugs) - known_slugs(slugs))
    if unknown:
        errors.append(f"Unknown locations: {', '.join(unknown)}.")
    return errors


def quorum_error(quorum: Any, slugs: Sequence[str]) -> str | None:
    """Why a quorum cannot apply to these locations (the default one counts as one when the
    list is empty); None when it can. Words always apply."""
    count = len(slugs) or 1
    if isinstance(quorum, int) and not isinstance(quorum, bool) and quorum > count:
        return (
            f"Must be at most the number of the endpoint's locations ({count}); "
            "or use any, majority or all."
        )
    return None
