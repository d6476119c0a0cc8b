"""The raw checks' indexes: the foreign key has no index of its own, since the two indexes
that lead with the endpoint serve every read by it (migration 0029, issue 26)."""

import pytest
from django.db import connection

from monitoring.models import CheckResult

TABLE = CheckResult._meta.db_table


def _indexes() -> dict[str, list[str]]:
    with connection.cursor() as cursor:
        found = connection.introspection.get_constraints(cursor, TABLE)
    return {
        name: info["columns"]
        for name, info in found.items()
        if (info["index"] or info["unique"]) and not info["primary_key"]
    }


def test_only_the_slot_time_and_failure_indexes_lead_with_the_endpoint(db):
    leading = sorted(
        tuple(columns) for columns in _indexes().values() if columns[0] == "endpoint_id"
    )

    assert leading == [
        ("endpoint_id", "checked_at"),  # check_endpoint_time_idx
        ("endpoint_id", "checked_at"),  # check_failed_idx (failures only)
        ("endpoint_id", "scheduled_for", "location"),  # check_one_per_slot
    ]


@pytest.mark.postgres("the plan of a PostgreSQL read")
def test_a_read_and_a_delete_by_endpoint_alone_still_use_an_index(db):
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        plans = []
        for sql in (
            f"SELECT id FROM {TABLE} WHERE endpoint_id = %s",  # noqa: S608 - the model's table
            f"DELETE FROM {TABLE} WHERE endpoint_id = %s",  # noqa: S608 - the model's table
        ):
            cursor.execute(f"EXPLAIN {sql}", ["00000000-0000-0000-0000-000000000001"])
            plans.append("\n".join(row[0] for row in cursor.fetchall()))

    for plan in plans:
        assert "Seq Scan" not in plan
        assert "Index Scan" in plan or "Index Only Scan" in plan
