"""The alerts page and its forms."""

from django.urls import path

from alerts import escalation_pages, views

urlpatterns = [
    path("alerts", views.alerts_page, name="alerts"),
    path("alerts/channels/new", views.channel_new, name="alert-channel-create"),
    path(
        "alerts/channels/<uuid:channel_id>/enable",
        views.channel_enable,
        name="alert-channel-enable",
    ),
    path(
        "alerts/channels/<uuid:channel_id>/disable",
        views.channel_disable,
        name="alert-channel-disable",
    ),
    path(
        "alerts/channels/<uuid:channel_id>/test",
        views.channel_send_test,
        name="alert-channel-test",
    ),
    path(
        "alerts/channels/<uuid:channel_id>/delete",
        views.channel_delete,
        name="alert-channel-delete",
    ),
    path("alerts/maintenance/new", views.window_new, name="alert-window-create"),
    path(
        "alerts/maintenance/<uuid:window_id>/delete",
        views.window_delete,
        name="alert-window-delete",
    ),
    path("escalation-policies", escalation_pages.policies_page, name="escalation-policies"),
    path("escalation-policies/new", escalation_pages.policy_new, name="escalation-policy-create"),
    path(
        "escalation-policies/<uuid:policy_id>",
        escalation_pages.policy_edit,
        name="escalation-policy-edit",
    ),
    path(
        "escalation-policies/<uuid:policy_id>/delete",
        escalation_pages.policy_delete,
        name="escalation-policy-delete",
    ),
]
