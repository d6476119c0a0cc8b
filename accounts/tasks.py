"""Mail delivery, off the request path: slow SMTP never delays a response or leaks through it."""

import smtplib

from celery import shared_task
from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string

from accounts.services import (
    SEND_EMAIL_TASK,
    SEND_PASSWORD_RESET_TASK,
    MailContext,
    password_reset_send,
)

TEMPLATES = frozenset({"invitation", "password_reset", "verify_email"})


@shared_task(
    name=SEND_EMAIL_TASK,
    autoretry_for=(OSError, smtplib.SMTPException),
    retry_backoff=True,
    max_retries=5,
    soft_time_limit=50,
    time_limit=60,
    ignore_result=True,
)
def send_email(*, template: str, to: str, context: MailContext) -> None:
    """Render `templates/emails/<template>` as text and HTML and send it to one address."""
    if template not in TEMPLATES:
        raise ValueError(f"unknown email template {template!r}")
    context = {**context, "web_base_url": settings.WEB_BASE_URL}
    # One line: mail headers must not carry newlines.
    subject = " ".join(render_to_string(f"emails/{template}_subject.txt", context).split())
    message = EmailMultiAlternatives(
        subject=subject,
        body=render_to_string(f"emails/{template}.txt", context),
        to=[to],
    )
    message.attach_alternative(render_to_string(f"emails/{template}.html", context), "text/html")
    message.send()


@shared_task(name=SEND_PASSWORD_RESET_TASK, soft_time_limit=50, time_limit=60, ignore_result=True)
def send_password_reset(*, email: str, ip: str | None = None) -> None:
    """Mail a reset link to this address if it belongs to an active account (`ip`: the
    requester's, for the audit log)."""
    password_reset_send(email=email, ip=ip)
