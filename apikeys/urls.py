"""Pages of the apikeys app: list, create (the key shown once) and revoke; and removing a
team member, which revokes the member's keys."""

from django.urls import path

from apikeys import views

urlpatterns = [
    path("api-keys", views.api_keys_page, name="api-keys"),
    path("api-keys/new", views.api_key_create, name="api-key-create"),
    path("api-keys/<uuid:api_key_id>/revoke", views.api_key_revoke, name="api-key-revoke"),
    path("team/<uuid:user_id>/remove", views.team_remove, name="team-remove"),
]
