"""Page-number pagination as the contract describes: `?page=`, `?page_size=` up to 500."""

from rest_framework import pagination


class PageNumberPagination(pagination.PageNumberPagination):
    """`{count, next, previous, results}` pages of 50 by default."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500
