"""Fetching API keys for a caller; another organization's key is a 404."""

from accounts.access import get_or_404
from accounts.models import User
from apikeys.models import ApiKey


def access_api_key(caller: User, api_key_id: object) -> ApiKey:
    """A key the caller manages (all of the organization's for managers, else its own)."""
    return get_or_404(ApiKey.objects.visible_to(caller).not_revoked(), api_key_id)
