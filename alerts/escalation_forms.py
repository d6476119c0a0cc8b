"""The escalation policy form of the pages: a name, the reminder interval, the projects,
and the steps as repeated rows (`step-N-after`, `step-N-channels`), blank rows ignored.

Its rules are `alerts.escalation_validation`'s, the ones the API applies; a refusal of a
step is shown beside its row.
"""

from collections import defaultdict
from typing import Any

from django import forms
from django.http import QueryDict

from alerts import escalation_validation as rules
from alerts.escalation_validation import StepInput
from alerts.forms import _ScopedForm
from healthmon.errors import InvalidInput


class PolicyForm(_ScopedForm):
    """A new or changed escalation policy."""

    name = forms.CharField(max_length=200)
    repeat_every_minutes = forms.IntegerField(required=False, min_value=1, max_value=10_080)

    steps: list[StepInput]

    def __init__(self, *args: Any, organization_id: Any, rows: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.organization_id = organization_id
        self.rows = rows
        self.row_errors: defaultdict[int, list[str]] = defaultdict(list)

    def posted_list(self, key: str) -> list[str]:
        """Every value posted under a key (the ticked checkboxes)."""
        return self.data.getlist(key) if isinstance(self.data, QueryDict) else []

    @property
    def initial_projects(self) -> list[str]:
        """The stored project ids, to show them selected."""
        return [str(pk) for pk in self.initial.get("projects", [])]

    def posted_steps(self) -> tuple[list[dict[str, Any]], list[int]]:
        """The filled rows as the API takes steps, and the row number of each."""
        steps, numbers = [], []
        for row in range(self.rows):
            after = (self.data.get(f"step-{row}-after") or "").strip()
            channels = self.posted_list(f"step-{row}-channels")
            if not after and not channels:
                continue
            steps.append(
                {"after_minutes": int(after) if after.isdigit() else after, "channels": channels}
            )
            numbers.append(row)
        return steps, numbers

    def clean(self) -> dict[str, Any]:
        """The steps as the validation checks them (`steps` once valid)."""
        cleaned = super().clean() or self.cleaned_data
        steps, numbers = self.posted_steps()
        try:
            self.steps = rules.steps(steps, organization_id=self.organization_id)
        except InvalidInput as exc:
            self._refuse_steps(exc, numbers)
        return cleaned

    def _refuse_steps(self, exc: InvalidInput, numbers: list[int]) -> None:
        """Each message beside its row (`steps[2].channels` is the third filled row)."""
        for key, messages in exc.errors.items():
            index = key.partition("[")[2].partition("]")[0]
            if index.isdigit() and int(index) < len(numbers):
                self.row_errors[numbers[int(index)]] += messages
            else:
                self.add_error(None, messages)
        if self.row_errors:
            self.add_error(None, "Some steps are not right: see below.")
