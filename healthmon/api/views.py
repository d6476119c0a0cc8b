"""Service-level views of healthmon itself."""

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView


class HealthView(APIView):
    """Liveness for load balancers: answers while the web process serves requests.

    It touches neither the database nor the broker, so a slow dependency never takes every
    web process out of rotation at once.
    """

    authentication_classes: list[type] = []
    permission_classes = [AllowAny]
    uses_database = False  # so never a 503 (healthmon/api/schema.py)

    @extend_schema(
        tags=["service"],
        summary="Liveness of the web process",
        responses={200: inline_serializer("Health", {"status": serializers.CharField()})},
    )
    def get(self, request: Request) -> Response:
        """`{"status": "ok"}`."""
        return Response({"status": "ok"})
