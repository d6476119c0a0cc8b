"""Pages of the accounts app: signing in, links from mails, the team and the projects."""

from django.urls import path

from accounts import views

urlpatterns = [
    path("login", views.login_page, name="login"),
    path("logout", views.logout_page, name="logout"),
    path("register", views.register_page, name="register"),
    path("forgot-password", views.forgot_password_page, name="forgot-password"),
    path("reset-password", views.reset_password_page, name="reset-password"),
    path("accept-invite", views.accept_invite_page, name="accept-invite"),
    path("verify-email", views.verify_email_page, name="verify-email"),
    path("account", views.account_page, name="account"),
    path("team", views.team_page, name="team"),
    path("team/invite", views.team_invite, name="team-invite"),
    path("team/<uuid:user_id>/role", views.team_change_role, name="team-role"),
    path("team/<uuid:user_id>/projects", views.team_set_projects, name="team-projects"),
    # team/<id>/remove is in apikeys.urls: removing a member revokes its API keys too.
    path(
        "team/invitations/<uuid:invitation_id>/revoke",
        views.team_revoke_invitation,
        name="team-revoke-invitation",
    ),
    path("projects", views.projects_page, name="projects"),
    path("projects/new", views.project_create, name="project-create"),
    path("projects/<uuid:project_id>/rename", views.project_rename, name="project-rename"),
    path("projects/<uuid:project_id>/delete", views.project_delete, name="project-delete"),
]
