"""The endpoint table leaves half of each page free for its rows' next versions, so that the
update every check round makes can stay on the page (a HOT update, no index written):
migration 0027 (PostgreSQL, issue 26)."""

import pytest
from django.db import connection

pytestmark = pytest.mark.postgres("fillfactor is a PostgreSQL storage parameter")


def test_the_endpoint_table_is_stored_at_fillfactor_50(db):
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = 'monitoring_endpoint'")
        options = cursor.fetchone()[0]

    assert "fillfactor=50" in options
