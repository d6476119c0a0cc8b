"""The project's OpenAPI schema class: healthmon's, plus which API keys may call each operation."""

from rest_framework.permissions import AllowAny

from accounts.permissions import IsUserCredential
from apikeys.permissions import required_scope
from healthmon.api import schema


class AutoSchema(schema.AutoSchema):
    """healthmon's schema, each operation's description ending with the key scope it needs."""

    def get_description(self) -> str:  # type: ignore[override]
        """The view's description, then which API keys may call the operation."""
        description: str = super().get_description()
        permissions = self.view.get_permissions()
        if any(isinstance(p, AllowAny) for p in permissions):
            return description
        if any(isinstance(p, IsUserCredential) for p in permissions):
            note = "API keys cannot call this operation: use a JWT."
        else:
            scope = required_scope(self.method, self.view)
            note = f"API key scope: `{scope}` (or `admin`)." if scope else "API key scope: `admin`."
        return f"{description}\n\n{note}".strip()
