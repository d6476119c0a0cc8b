"""OpenAPI generation: every operation documents the problem+json errors it can answer."""

from typing import Any

from drf_spectacular import openapi
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers
from rest_framework.permissions import AllowAny

from healthmon.errors import PROBLEM_CONTENT_TYPE


class ProblemSerializer(serializers.Serializer[Any]):
    """RFC 9457 problem details."""

    type = serializers.URLField()
    title = serializers.CharField()
    status = serializers.IntegerField()
    code = serializers.CharField(help_text="Stable, machine-readable error code.")
    detail = serializers.CharField()
    errors = serializers.DictField(  # type: ignore[assignment]
        child=serializers.ListField(child=serializers.CharField()),
        required=False,
        help_text="Messages per field; present on validation errors only.",
    )


_DESCRIPTIONS = {
    "400": "Invalid input (`validation_error`, or an operation-specific code).",
    "401": "Missing, invalid or expired credential.",
    "403": "Authenticated, but the role or key scope does not allow this.",
    "404": "No such resource in the caller's organization.",
    "409": "Conflicts with existing data.",
    "413": "Request body too large.",
    "429": "Throttled; retry after the number of seconds in `Retry-After`.",
    "503": "The database is down or out of reach; retry after the seconds in `Retry-After`.",
}

_PAGED_404 = "No such resource in the caller's organization, or a page past the last."


class AutoSchema(openapi.AutoSchema):
    """drf-spectacular's schema plus the error responses of each operation.

    The apps above add what only they know (`apikeys.api.schema`: the key scope).
    """

    def _get_parameters(self) -> list[dict[str, Any]]:
        """The parameters; an optional query parameter sent empty counts as absent.

        DRF's fields, django-filter and the paginator all read `?to=` like no `to` at all.
        """
        parameters: list[dict[str, Any]] = super()._get_parameters()
        for parameter in parameters:
            if parameter["in"] == "query" and not parameter.get("required"):
                parameter["allowEmptyValue"] = True
        return parameters

    def _get_response_bodies(self, direction: openapi.Direction = "response") -> dict[str, Any]:
        responses: dict[str, Any] = super()._get_response_bodies(direction)
        for code in self._error_codes() | {c for c in responses if c >= "400"}:
            description = responses.get(code, {}).get("description") or self._description(code)
            responses[code] = self._get_response_for_code(
                OpenApiResponse(ProblemSerializer, description=description),
                code,
                [PROBLEM_CONTENT_TYPE],
                direction,
            )
        return dict(sorted(responses.items()))

    def _description(self, code: str) -> str:
        if code == "404" and self._get_pagination_parameters():
            by_id = "{" in self.path or "404" in getattr(self.view, "schema_error_codes", ())
            return _PAGED_404 if by_id else "A page past the last."
        return _DESCRIPTIONS.get(code, "")

    def _error_codes(self) -> set[str]:
        codes: set[str] = set()
        if self.method in {"POST", "PUT", "PATCH"}:
            codes |= {"400", "413"}
        if not any(isinstance(p, AllowAny) for p in self.view.get_permissions()):
            codes |= {"401", "403"}
        if "{" in self.path:
            codes.add("404")
        if any(parameter["in"] == "query" for parameter in self._get_parameters()):
            codes.add("400")  # a malformed filter, range or page
        if self._get_pagination_parameters():
            codes.add("404")  # a page past the last
        if self.view.get_throttles():
            codes.add("429")
        if getattr(self.view, "uses_database", True):
            codes.add("503")
        # Views whose query parameters can name a foreign id say so.
        return codes | set(getattr(self.view, "schema_error_codes", ()))
