"""The typed report rows and the schema's serializers describe the same fields."""

import typing

import pytest

from analytics import rows
from analytics.api import serializers as shapes

PAIRS = [
    (rows.SummaryRow, shapes.SummarySerializer),
    (rows.UptimeRow, shapes.UptimeSerializer),
    (rows.SeriesPoint, shapes.PointSerializer),
    (rows.SeriesRow, shapes.SeriesSerializer),
    (rows.IncidentRow, shapes._Incident),
    (rows.AvailabilityBucket, shapes._AvailabilityBucket),
    (rows.MaintenanceRow, shapes._Maintenance),
    (rows.AvailabilityRow, shapes.AvailabilitySerializer),
    (rows.ErrorPoint, shapes._ErrorPoint),
    (rows.Cause, shapes._Cause),
    (rows.ErrorsRow, shapes.ErrorsSerializer),
    (rows.SlaTier, shapes.TierSerializer),
    (rows.SlaRow, shapes.SlaSerializer),
    (rows.CompareRow, shapes.CompareSerializer),
    (rows.LocationSummaryRow, shapes.LocationSummarySerializer),
    (rows.LocationSeriesRow, shapes.LocationSeriesSerializer),
    (rows.LocationUptimeRow, shapes.LocationUptimeSerializer),
]


@pytest.mark.parametrize(("row", "serializer"), PAIRS, ids=[row.__name__ for row, _ in PAIRS])
def test_a_row_has_the_fields_its_serializer_describes(row, serializer):
    keys = row.__required_keys__ | row.__optional_keys__
    fields = serializer().fields

    assert keys == set(fields)
    optional = {name for name, field in fields.items() if not field.required}
    assert row.__optional_keys__ == optional


def _nullable(hint):
    return type(None) in typing.get_args(hint)


@pytest.mark.parametrize(("row", "serializer"), PAIRS, ids=[row.__name__ for row, _ in PAIRS])
def test_a_field_the_row_may_leave_null_is_nullable_in_the_schema(row, serializer):
    hints = typing.get_type_hints(row)
    fields = serializer().fields

    nullable = {name for name, field in fields.items() if getattr(field, "allow_null", False)}
    assert {name for name, hint in hints.items() if _nullable(hint)} == nullable
