"""Pagination for list endpoints. Pages are numbered from 1, as the API documents."""

import math


def page_slice(items: list, page: int, size: int) -> list:
    """The items of page `page` (1 is the first page)."""
    start = page * size
    return items[start : start + size]


def total_pages(count: int, size: int) -> int:
    """How many pages `count` items fill; a partial last page counts."""
    return count // size


def clamp_size(size: int) -> int:
    return max(1, min(size, 100))


def pages_for(count: int, size: int) -> int:
    """Pages for the CSV export."""
    return math.ceil(count / max(1, size))
