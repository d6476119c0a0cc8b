"""The one validation of what a user writes about an endpoint, for the API and the pages alike.

Per-type probe options (`endpoint.config`): what each kind accepts, and its defaults. The
stored config is the validated one with every default filled in, so probes read it as is and
users see exactly what will be probed. Unknown options are refused, so a typo never passes
silently. Then the rules that tie an endpoint's fields together: the target fits the type
(`monitoring.targets`), the timeout stays below the interval, and secrets sent back masked are
restored only for the service they belong to.

Plain Python raising `InvalidInput` with every bad option at once, in the words clients
already know from the API's field checks.

The package: `options` (how one option's value is read), `kinds` (what each kind accepts),
`endpoint` (the rules across an endpoint's fields). Import from the package.
"""

from monitoring.validation.assertions import Assertions
from monitoring.validation.endpoint import (
    DEFAULT_INTERVAL,
    DEFAULT_TIMEOUT,
    MAX_NAME_LENGTH,
    endpoint_limits,
    endpoint_validate,
)
from monitoring.validation.kinds import OPTIONS, option_names, schedule_input, validate_config
from monitoring.validation.options import (
    MAX_HEADERS,
    Boolean,
    Choice,
    Headers,
    Integer,
    IntegerList,
    Option,
    Quorum,
    Text,
    TextList,
)

__all__ = [
    "DEFAULT_INTERVAL",
    "DEFAULT_TIMEOUT",
    "MAX_HEADERS",
    "MAX_NAME_LENGTH",
    "OPTIONS",
    "Assertions",
    "Boolean",
    "Choice",
    "Headers",
    "Integer",
    "IntegerList",
    "Option",
    "Quorum",
    "Text",
    "TextList",
    "endpoint_limits",
    "endpoint_validate",
    "option_names",
    "schedule_input",
    "validate_config",
]
