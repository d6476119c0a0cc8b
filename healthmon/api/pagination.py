"""Page-number pagination as the contract describes: `?page=`, `?page_size=` up to 500."""

import re
from typing import Any, cast

from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from rest_framework import pagination
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request

from healthmon.db import Rows

_WHOLE_NUMBER = re.compile(r"[0-9]{1,18}")
# The largest offset a page may start at: beyond any table's rows, and within the
# 64-bit OFFSET a database accepts (a larger one is an error there, not an empty page).
MAX_OFFSET = 2**62


def _positive_int(request: Request, name: str, default: int, maximum: int | None = None) -> int:
    """The parameter as a whole number from 1 (to `maximum`); empty or absent is `default`."""
    raw = request.query_params.get(name)
    if not raw:
        return default
    value = int(raw) if _WHOLE_NUMBER.fullmatch(raw) else 0
    if value < 1 or (maximum is not None and value > maximum):
        upper = f" to {maximum}" if maximum is not None else ""
        raise ValidationError({name: [f"Must be a whole number from 1{upper}."]})
    return value


class PageNumberPagination(pagination.PageNumberPagination):
    """`{count, next, previous, results}` pages of 50 by default.

    A malformed `page` or `page_size` is a 400 (DRF would answer 404 for the one and silently
    use the default for the other); a page past the last is a 404.
    """

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500
    last_page_strings = ()

    def paginate_queryset(
        self, queryset: Any, request: Request, view: Any = None
    ) -> list[Any] | None:
        """The page's rows; the total is counted only when the page is full.

        The page is read with one row more than it holds: when fewer come back, the total
        is the rows before the page plus those on it, and the `COUNT` query (as costly as
        the page itself on a short list) is skipped. Pages past the last are still a 404.
        `Rows` (read without a QuerySet) and lists already read are paged the same way.
        """
        if not isinstance(queryset, QuerySet | Rows | list):
            return super().paginate_queryset(queryset, request, view)
        self.request = request
        size = self.get_page_size(request)
        paginator = Paginator(cast(Any, queryset), size)
        number = self.get_page_number(request, paginator)
        offset = (number - 1) * size
        if offset > MAX_OFFSET:
            raise self._past_the_end(number)
        rows = list(queryset[offset : offset + size + 1])
        if len(rows) > size:
            rows = rows[:size]
        elif rows or number == 1:
            paginator.count = offset + len(rows)  # a cached_property: set, it is not counted
        else:
            raise self._past_the_end(number)
        self.page = Page(rows, number, paginator)
        return rows

    def _past_the_end(self, number: int) -> NotFound:
        message = "That page contains no results"
        return NotFound(self.invalid_page_message.format(page_number=number, message=message))

    def get_page_size(self, request: Request) -> int:
        """`page_size` from 1 to 500, else a 400."""
        return _positive_int(
            request, self.page_size_query_param, self.page_size, self.max_page_size
        )

    def get_page_number(self, request: Request, paginator: Paginator) -> int:
        """`page` from 1, else a 400."""
        return _positive_int(request, self.page_query_param, 1)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        """The parameters with the bounds the server enforces."""
        parameters: list[dict[str, Any]] = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            parameter["schema"]["minimum"] = 1
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"]["maximum"] = self.max_page_size
        return parameters
