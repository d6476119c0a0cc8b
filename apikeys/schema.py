"""OpenAPI description of the API key authentication scheme."""

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema


class ApiKeyScheme(OpenApiAuthenticationExtension):
    """`Authorization: Bearer <API key>`."""

    target_class = "apikeys.authentication.ApiKeyAuthentication"
    name = "apiKeyAuth"

    def get_security_definition(self, auto_schema: AutoSchema) -> dict[str, Any]:
        """HTTP bearer scheme carrying an API key."""
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "API key",
            "description": (
                "An API key (`hm_live_...`) from POST /api-keys. Its scopes limit the routes "
                "it may use; each operation names the scope it needs."
            ),
        }
