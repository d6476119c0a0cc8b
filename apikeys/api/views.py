"""API key routes: issue (shown once), list and revoke; and the users routes, whose
removal revokes the removed user's keys."""

from django.db.models import QuerySet
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import mixins, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.api import views as accounts_views
from accounts.models import User
from accounts.permissions import caller
from apikeys import services
from apikeys.access import access_api_key
from apikeys.api import serializers as s
from apikeys.models import ApiKey


@extend_schema(tags=["api-keys"])
@extend_schema_view(
    list=extend_schema(summary="List the API keys you manage (never the keys themselves)"),
    retrieve=extend_schema(summary="One API key's record"),
    create=extend_schema(
        summary="Issue an API key; the key is in this answer only",
        request=s.ApiKeyCreateSerializer,
        responses={201: s.ApiKeyCreatedSerializer},
        examples=[
            OpenApiExample(
                "Read-only dashboard key",
                request_only=True,
                value={
                    "name": "status dashboard",
                    "scopes": ["endpoint:read", "incident:read", "analytics:read"],
                },
            )
        ],
    ),
    destroy=extend_schema(summary="Revoke an API key; it answers 401 from then on"),
)
class ApiKeyViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Keys of the organization: owners and admins manage all, members their own.

    No scope is declared, so only a JWT or an `admin` key gets here.
    """

    serializer_class = s.ApiKeySerializer

    def get_queryset(self) -> QuerySet[ApiKey]:
        """Keys the caller manages, revoked ones left out."""
        if getattr(self, "swagger_fake_view", False):
            return ApiKey.objects.none()
        return ApiKey.objects.visible_to(caller(self.request)).not_revoked()

    def get_object(self) -> ApiKey:
        """A key the caller manages, else 404."""
        return access_api_key(caller(self.request), self.kwargs["pk"])

    def create(self, request: Request) -> Response:
        """Issue a key with the given scopes and optional expiry."""
        serializer = s.ApiKeyCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        api_key, key = services.api_key_create(creator=caller(request), **serializer.validated_data)
        body = s.ApiKeyCreatedSerializer(api_key).data
        body["key"] = key
        return Response(body, status=status.HTTP_201_CREATED)

    def perform_destroy(self, instance: ApiKey) -> None:
        """Revoke; the record stays for the admin."""
        services.api_keys_revoke(api_keys=ApiKey.objects.filter(pk=instance.pk))


@extend_schema_view(
    destroy=extend_schema(
        summary="Remove a user (owner, admin); never yourself or the last owner",
        responses={
            204: None,
            400: OpenApiResponse(description="`cannot_remove_self` or `last_owner`."),
        },
    ),
)
class UserViewSet(mixins.DestroyModelMixin, accounts_views.UserViewSet):
    """Users of the caller's organization; owners and admins only."""

    # The docstring is the operations' description, as in accounts. This class adds the
    # removal to accounts' users routes: it revokes the removed user's API keys too.

    def perform_destroy(self, instance: User) -> None:
        """Remove through the workflow that enforces the self and last-owner rules."""
        services.member_remove(actor=caller(self.request), user=instance)
