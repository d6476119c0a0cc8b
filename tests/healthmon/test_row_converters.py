"""`ColumnRows` converts each column's value as the ORM does, by one function per column
(healthmon.db._value_converter): a plain JSONField's documents without the ORM's call per
value, any other converter as the ORM calls it."""

import json

import pytest
from django.db import connection, models

from healthmon.db import _value_converter


class _Decoder(json.JSONDecoder):
    def decode(self, s, *args, **kwargs):
        return ("decoded by", super().decode(s, *args, **kwargs))


PLAIN = models.JSONField()
WITH_DECODER = models.JSONField(decoder=_Decoder)
VALUES = [
    None,
    '{"a": [1, 2.5, null, "x"]}',
    "[]",
    '"text"',
    "12",
    "not json",
    "\ufeff{}",
    # Integers past 64 bits (a faster parser, orjson, read them as floats: not used),
    # numbers past a double, escapes, duplicate keys.
    '{"n": 123456789012345678901234567890, "m": -18446744073709551617}',
    "[1e400, 0.1, 5e-324]",
    '{"s": "\\u00e9\\ud83d\\ude00", "k": 1, "k": 2}',
]


@pytest.mark.parametrize("field", [PLAIN, WITH_DECODER], ids=["plain", "decoder"])
@pytest.mark.parametrize("value", VALUES)
def test_a_json_column_is_read_as_the_orm_reads_it(field, value):
    expression = object()
    convert = _value_converter([field.from_db_value], expression, connection)

    assert convert(value) == field.from_db_value(value, expression, connection)


def test_other_converters_are_called_in_order_with_the_expression_and_connection():
    expression, calls = object(), []

    def first(value, got_expression, got_connection):
        calls.append((got_expression, got_connection))
        return value + 1

    def second(value, got_expression, got_connection):
        return value * 10

    assert _value_converter([first, second], expression, connection)(1) == 20
    assert calls == [(expression, connection)]
