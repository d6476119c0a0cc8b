"""Celery tasks of status pages: subscribers' confirmation mails, the fan-out of incident
updates (beat), and the batches of update mails."""

import smtplib
from uuid import UUID

from celery import Task, shared_task

from statuspages.services.subscribers import (
    SEND_CONFIRMATION_TASK,
    SEND_MAILS_TASK,
    subscriber_confirmation_send,
    subscriber_mails_fan_out,
    subscriber_mails_send,
)


@shared_task(
    name=SEND_CONFIRMATION_TASK,
    autoretry_for=(OSError, smtplib.SMTPException),
    retry_backoff=True,
    max_retries=5,
    soft_time_limit=50,
    time_limit=60,
    ignore_result=True,
)
def send_subscriber_confirmation(subscriber_id: str) -> bool:
    """Mail a new subscriber its confirmation link (nothing once confirmed or gone)."""
    return subscriber_confirmation_send(subscriber_id=UUID(subscriber_id))


@shared_task(ignore_result=True, acks_late=False, soft_time_limit=50, time_limit=60)
def fan_out_subscriber_mails() -> int:
    """Queue one mail per confirmed subscriber for each public incident update that asks
    for it (beat runs this every 5 s); safe to run twice at once."""
    return subscriber_mails_fan_out()


@shared_task(
    name=SEND_MAILS_TASK,
    bind=True,
    acks_late=True,
    max_retries=5,
    soft_time_limit=100,
    time_limit=120,
    ignore_result=True,
)
def send_subscriber_mails(self: Task, mail_ids: list[int]) -> int:
    """Send a batch of update mails, each at most once; the failed ones retry with backoff
    (a duplicate or late task finds them sent and sends nothing)."""
    outcome = subscriber_mails_send(mail_ids=mail_ids)
    if outcome.failed and self.request.retries < (self.max_retries or 0):
        raise self.retry(args=[outcome.failed], countdown=30 * 2**self.request.retries)
    return outcome.sent
