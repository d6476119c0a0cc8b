"""Accounts API: authentication, users, invitations and projects."""

from typing import Any, cast

from django.db.models import QuerySet
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import AllowAny, BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer
from rest_framework.settings import api_settings

from accounts import selectors, services
from accounts.access import access_pending_invitation, access_project, access_user
from accounts.api import serializers as s
from accounts.api.filters import AuditEventFilter
from accounts.api.throttling import AuthAccountThrottle, AuthIPThrottle, AuthUserThrottle
from accounts.models import AuditEvent, Invitation, Project, User
from accounts.permissions import IsManager, IsManagerOrReadOnly, IsUserCredential, caller
from accounts.tokens import issue_access_token

# The project's default permission, from settings: an organization member, and an API key
# within the scope the view declares (`apikeys.permissions.HasScope`; apikeys sits above
# accounts, so the views here name it through settings and declare scopes by value).
# DRF resolves the dotted paths of the setting to classes.
MEMBER = cast(list[type[BasePermission]], list(api_settings.DEFAULT_PERMISSION_CLASSES))
ENDPOINT_READ = "endpoint:read"  # apikeys.models.Scope.ENDPOINT_READ

CONFLICT = OpenApiResponse(description="Conflicts with an existing account or name (`conflict`).")
REGISTER_EXAMPLE = OpenApiExample(
    "Register",
    request_only=True,
    value={
        "email": "you@example.com",
        "password": "a-long-passphrase",
        "organization_name": "Acme",
    },
)
FORGOT_PASSWORD_DETAIL = "If an account exists for this email, a reset link has been sent."  # noqa: S105


def _valid(serializer_class: type[BaseSerializer[Any]], request: Request) -> dict[str, Any]:
    serializer = serializer_class(data=request.data, context={"request": request})
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


def _token_body(user: User) -> dict[str, Any]:
    return {**s.TokenSerializer(issue_access_token(user)).data, "user": s.UserSerializer(user).data}


@extend_schema(tags=["auth"])
class AuthViewSet(viewsets.ViewSet):
    """Sign-up, sign-in and the flows behind the mailed links.

    The public routes ignore any Authorization header, so a stale token never blocks a login.
    """

    authentication_classes: list[type] = []
    permission_classes = [AllowAny]
    throttle_classes = [AuthIPThrottle, AuthAccountThrottle]

    @extend_schema(
        summary="Register an organization and its owner; answers a JWT",
        request=s.RegisterSerializer,
        examples=[REGISTER_EXAMPLE],
        responses={
            201: s.RegisterResponseSerializer,
            409: OpenApiResponse(description="An account with this email exists (`conflict`)."),
        },
    )
    @action(detail=False, methods=["post"])
    def register(self, request: Request) -> Response:
        """Create an organization, its owner and default project; returns a JWT."""
        user, organization, project = services.account_register(
            **_valid(s.RegisterSerializer, request)
        )
        body = _token_body(user)
        body["organization"] = s.OrganizationSerializer(organization).data
        body["project"] = s.ProjectSerializer(project).data
        return Response(body, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Sign in with email and password; answers a JWT valid 7 days",
        request=s.LoginSerializer,
        responses={
            200: s.LoginResponseSerializer,
            401: OpenApiResponse(description="Wrong email or password (`invalid_credentials`)."),
            403: OpenApiResponse(description="Email not verified (`email_not_verified`)."),
        },
    )
    @action(detail=False, methods=["post"])
    def login(self, request: Request) -> Response:
        """Exchange email and password for a JWT valid 7 days."""
        user = services.account_login(**_valid(s.LoginSerializer, request))
        return Response(_token_body(user))

    @extend_schema(
        summary="Mail a password reset link (the same answer for unknown emails)",
        request=s.EmailSerializer,
        responses={202: s.DetailSerializer},
    )
    @action(detail=False, methods=["post"], url_path="forgot-password")
    def forgot_password(self, request: Request) -> Response:
        """Mail a one-hour reset link; the answer is the same whether the email exists or not."""
        services.password_reset_request(**_valid(s.EmailSerializer, request))
        return Response({"detail": FORGOT_PASSWORD_DETAIL}, status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        summary="Set a new password with a mailed reset token",
        request=s.TokenPasswordSerializer,
        responses={200: s.DetailSerializer},
    )
    @action(detail=False, methods=["post"], url_path="reset-password")
    def reset_password(self, request: Request) -> Response:
        """Set a new password from a reset link; every earlier JWT stops working."""
        services.password_reset_complete(**_valid(s.TokenPasswordSerializer, request))
        return Response({"detail": "Your password has been reset. Sign in with the new one."})

    @extend_schema(
        summary="Accept an invitation by choosing a password; answers a JWT",
        request=s.TokenPasswordSerializer,
        responses={201: s.LoginResponseSerializer, 409: CONFLICT},
    )
    @action(detail=False, methods=["post"], url_path="accept-invite")
    def accept_invite(self, request: Request) -> Response:
        """Accept an invitation by setting a password; returns a JWT for the new user."""
        user = services.invitation_accept(**_valid(s.TokenPasswordSerializer, request))
        return Response(_token_body(user), status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Confirm an email address with a mailed token",
        request=s.VerifyEmailSerializer,
        responses={200: s.DetailSerializer},
    )
    @action(
        detail=False, methods=["post"], url_path="verify-email", throttle_classes=[AuthIPThrottle]
    )
    def verify_email(self, request: Request) -> Response:
        """Confirm the email address from the mailed link."""
        services.email_verify(**_valid(s.VerifyEmailSerializer, request))
        return Response({"detail": "Your email address is verified."})

    @extend_schema(
        summary="Change your password; every other JWT stops working",
        request=s.ChangePasswordSerializer,
        responses={200: s.TokenSerializer},
    )
    @action(
        detail=False,
        methods=["post"],
        url_path="change-password",
        authentication_classes=api_settings.DEFAULT_AUTHENTICATION_CLASSES,
        permission_classes=[IsUserCredential, *MEMBER],
        throttle_classes=[AuthUserThrottle],
    )
    def change_password(self, request: Request) -> Response:
        """Change the caller's password; every other JWT stops working, a new one is returned."""
        user = services.password_change(
            user=caller(request), **_valid(s.ChangePasswordSerializer, request)
        )
        body = _token_body(user)
        del body["user"]
        return Response(body)

    @extend_schema(summary="The caller and its organization", responses={200: s.MeSerializer})
    @action(
        detail=False,
        methods=["get"],
        authentication_classes=api_settings.DEFAULT_AUTHENTICATION_CLASSES,
        permission_classes=MEMBER,
        throttle_classes=[],
    )
    def me(self, request: Request) -> Response:
        """The caller and its organization."""
        return Response(s.MeSerializer(caller(request)).data)


class ManagerOnlyViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    viewsets.GenericViewSet,
):
    """List and read, for the owners and admins of the organization."""

    permission_classes = [*MEMBER, IsManager]


@extend_schema(tags=["users"])
@extend_schema_view(
    list=extend_schema(summary="List the organization's users (owner, admin)"),
    retrieve=extend_schema(summary="One user of the organization (owner, admin)"),
)
class UserViewSet(ManagerOnlyViewSet):
    """Users of the caller's organization; owners and admins only.

    Served as `apikeys.api.views.UserViewSet`, which adds the removal: removing a user
    revokes its API keys too, a workflow of the layer above.
    """

    serializer_class = s.UserDetailSerializer

    def get_queryset(self) -> QuerySet[User]:
        """Users of the caller's organization."""
        if getattr(self, "swagger_fake_view", False):  # schema generation has no user
            return User.objects.none()
        return selectors.user_list(organization=caller(self.request).organization)

    def get_object(self) -> User:
        """A user of the caller's organization, else 404."""
        return access_user(caller(self.request), self.kwargs["pk"])

    @extend_schema(
        summary="Change a user's role (owner, admin)",
        request=s.RoleSerializer,
        responses={200: s.UserDetailSerializer},
    )
    @action(detail=True, methods=["patch"])
    def role(self, request: Request, pk: str) -> Response:
        """Change a user's role; only owners grant or change `owner`."""
        user = services.user_change_role(
            actor=caller(request), user=self.get_object(), **_valid(s.RoleSerializer, request)
        )
        return Response(s.UserDetailSerializer(user).data)

    @extend_schema(
        summary="Replace the projects granted to a user (owner, admin)",
        request=s.UserProjectsSerializer,
        responses={200: s.UserDetailSerializer},
    )
    @action(detail=True, methods=["put"])
    def projects(self, request: Request, pk: str) -> Response:
        """Replace the projects granted to a user (what a member can see)."""
        user = self.get_object()
        services.user_set_projects(user=user, **_valid(s.UserProjectsSerializer, request))
        return Response(s.UserDetailSerializer(user).data)

    @extend_schema(
        summary="Invite someone by email with a role and projects (owner, admin)",
        request=s.InvitationCreateSerializer,
        responses={201: s.InvitationSerializer, 409: CONFLICT},
        examples=[
            OpenApiExample(
                "Member", request_only=True, value={"email": "dev@example.com", "role": "member"}
            )
        ],
    )
    @action(detail=False, methods=["post"])
    def invite(self, request: Request) -> Response:
        """Invite someone by email with a role and projects; the link expires after 7 days."""
        invitation = services.invitation_create(
            inviter=caller(request), **_valid(s.InvitationCreateSerializer, request)
        )
        return Response(s.InvitationSerializer(invitation).data, status=status.HTTP_201_CREATED)


@extend_schema(tags=["users"])
@extend_schema_view(
    list=extend_schema(summary="List pending invitations (owner, admin)"),
    retrieve=extend_schema(summary="One pending invitation (owner, admin)"),
    destroy=extend_schema(summary="Revoke an invitation; its link stops working"),
)
class InvitationViewSet(mixins.DestroyModelMixin, ManagerOnlyViewSet):
    """Pending invitations of the caller's organization; owners and admins only."""

    serializer_class = s.InvitationSerializer

    def get_queryset(self) -> QuerySet[Invitation]:
        """Pending invitations of the caller's organization."""
        if getattr(self, "swagger_fake_view", False):
            return Invitation.objects.none()
        return selectors.invitation_list_pending(organization=caller(self.request).organization)

    def get_object(self) -> Invitation:
        """A pending invitation of the caller's organization, else 404."""
        return access_pending_invitation(caller(self.request), self.kwargs["pk"])

    def perform_destroy(self, instance: Invitation) -> None:
        """Revoke: the mailed link stops working."""
        services.invitation_revoke(invitation=instance)


@extend_schema(tags=["projects"])
@extend_schema_view(
    list=extend_schema(summary="List the projects you can see"),
    retrieve=extend_schema(summary="One project"),
    create=extend_schema(
        summary="Create a project (owner, admin)",
        responses={201: s.ProjectSerializer, 409: CONFLICT},
        examples=[OpenApiExample("Project", request_only=True, value={"name": "Payments"})],
    ),
    partial_update=extend_schema(
        summary="Rename a project (owner, admin)",
        responses={200: s.ProjectSerializer, 409: CONFLICT},
    ),
    destroy=extend_schema(
        summary="Delete a project without endpoints (owner, admin)",
        responses={
            204: None,
            409: OpenApiResponse(description="The project still has endpoints (`conflict`)."),
        },
    ),
)
class ProjectViewSet(viewsets.ModelViewSet):
    """Projects: everyone reads the ones it can see; owners and admins write."""

    permission_classes = [*MEMBER, IsManagerOrReadOnly]
    read_scope = ENDPOINT_READ
    serializer_class = s.ProjectSerializer
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self) -> QuerySet[Project]:
        """Projects the caller can see."""
        if getattr(self, "swagger_fake_view", False):
            return Project.objects.none()
        return Project.objects.visible_to(caller(self.request)).order_by("created_at", "name")

    def get_object(self) -> Project:
        """A project the caller can see, else 404."""
        project = access_project(caller(self.request), self.kwargs["pk"])
        self.check_object_permissions(self.request, project)
        return project

    def perform_create(self, serializer: BaseSerializer[Project]) -> None:
        """Create in the caller's organization."""
        serializer.instance = services.project_create(
            organization=caller(self.request).organization, name=serializer.validated_data["name"]
        )

    def perform_update(self, serializer: BaseSerializer[Project]) -> None:
        """Rename."""
        assert serializer.instance is not None  # noqa: S101 - DRF always sets it on update
        serializer.instance = services.project_rename(
            project=serializer.instance,
            name=serializer.validated_data.get("name", serializer.instance.name),
        )

    def perform_destroy(self, instance: Project) -> None:
        """Delete an empty project; one that still has endpoints is a conflict."""
        services.project_delete(project=instance)

    @extend_schema(
        summary="Give the project a new ping key; the old one stops working (owner, admin)",
        request=None,
        responses={200: s.ProjectSerializer},
    )
    @action(detail=True, methods=["post"], url_path="rotate-ping-key")
    def rotate_ping_key(self, request: Request, pk: str) -> Response:
        """Replace the key of the project's heartbeat slug URLs."""
        project = services.project_rotate_ping_key(project=self.get_object())
        return Response(self.get_serializer(project).data)


@extend_schema(tags=["audit"])
@extend_schema_view(
    list=extend_schema(
        summary="The organization's audit log, newest first (owner, admin; keys need `admin`)"
    )
)
class AuditLogViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """Security-relevant actions in the caller's organization: sign-ins, password resets
    and changes, invitations, role changes, removals, API keys and endpoints."""

    permission_classes = [*MEMBER, IsManager]
    serializer_class = s.AuditEventSerializer
    filterset_class = AuditEventFilter

    def get_queryset(self) -> QuerySet[AuditEvent]:
        """Events of the caller's organization."""
        if getattr(self, "swagger_fake_view", False):
            return AuditEvent.objects.none()
        return AuditEvent.objects.for_org(caller(self.request).organization)
