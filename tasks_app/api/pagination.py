from __future__ import annotations

from typing import Any

from rest_framework.pagination import PageNumberPagination

from tasks_app.errors import ValidationFailed


def _positive_int(request: Any, name: str, *, maximum: int | None = None) -> int | None:
    raw = request.query_params.get(name)
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1 or (maximum is not None and value > maximum):
        bound = f" and at most {maximum}" if maximum else ""
        raise ValidationFailed(
            f"{name} must be a whole number of at least 1{bound}.", details={name: [f"Got {raw!r}."]}
        )
    return value


class PagePagination(PageNumberPagination):
    """Page-number pagination that refuses a malformed `page` or `page_size` with a
    400 rather than quietly serving a default page; a page past the end is a 404."""

    page_size_query_param = "page_size"
    max_page_size = 500

    def get_page_size(self, request: Any) -> int:
        return _positive_int(request, self.page_size_query_param, maximum=self.max_page_size) or self.page_size

    def paginate_queryset(self, queryset: Any, request: Any, view: Any = None) -> Any:
        _positive_int(request, self.page_query_param)
        return super().paginate_queryset(queryset, request, view)
