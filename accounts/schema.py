"""OpenAPI description of the accounts authentication scheme."""

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema


class JWTScheme(OpenApiAuthenticationExtension):
    """`Authorization: Bearer <JWT>`."""

    target_class = "accounts.authentication.JWTAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema: AutoSchema) -> dict[str, Any]:
        """HTTP bearer scheme."""
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "JWT",
            "description": "A JWT from /auth/login (valid 7 days by default).",
        }
