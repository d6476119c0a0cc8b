"""The alerts' refusals, as plain domain exceptions (no HTTP framework).

Their codes are the shared ones (`healthmon.errors.ErrorCode`): the alerts add none.
"""

from healthmon.errors import TooManyRequests


class TestTooSoon(TooManyRequests):
    """A channel was tested moments ago: the API answers 429 with `Retry-After`, the page
    asks to wait."""

    __test__ = False  # a domain error, not a test class for pytest to collect
