"""Reads of escalation policies: their steps with the channel ids of each, loaded for many
policies in two queries (channels themselves are not loaded: their configs are encrypted)."""

import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from accounts.access import get_or_404
from accounts.models import User
from alerts.models import EscalationPolicy, EscalationStep, ScopedQuerySet


@dataclass(frozen=True)
class StepView:
    """A stored step: its delay and its channels' ids (in a stable order)."""

    position: int
    after_minutes: int
    channel_ids: tuple[uuid.UUID, ...]


def load_steps(policies: Sequence[EscalationPolicy]) -> None:
    """Set `step_list` (a list of `StepView`, in order) on each policy: two queries for all."""
    if not policies:
        return
    by_policy: defaultdict[uuid.UUID, list[EscalationStep]] = defaultdict(list)
    steps = list(EscalationStep.objects.filter(policy__in=[p.pk for p in policies]))
    for step in steps:
        by_policy[step.policy_id].append(step)
    through = EscalationStep.channels.through
    links: defaultdict[int, list[uuid.UUID]] = defaultdict(list)
    pairs = through.objects.filter(escalationstep_id__in=[s.pk for s in steps])
    for step_id, channel_id in pairs.values_list("escalationstep_id", "notificationchannel_id"):
        links[step_id].append(channel_id)
    for policy in policies:
        policy.step_list = [  # type: ignore[attr-defined]
            StepView(s.position, s.after_minutes, tuple(sorted(links[s.pk], key=str)))
            for s in sorted(by_policy[policy.pk], key=lambda s: s.position)
        ]


def policies_visible(user: User) -> ScopedQuerySet:
    """The policies a user sees: managers all of the organization's, members those for the
    whole organization or touching one of their projects."""
    return EscalationPolicy.objects.visible_to(user)


def access_policy(caller: User, policy_id: object) -> EscalationPolicy:
    """A policy the caller can see, else 404 (a foreign id too)."""
    policy: EscalationPolicy = get_or_404(policies_visible(caller), policy_id)
    return policy
