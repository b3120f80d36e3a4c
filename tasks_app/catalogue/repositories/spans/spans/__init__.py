"""spans: half-open intervals and date ranges."""

from spans.dates import business_days, days, split_by_month
from spans.interval import Interval
from spans.sets import gaps, merge, subtract, total_length

__all__ = ["Interval", "business_days", "days", "gaps", "merge", "split_by_month", "subtract", "total_length"]
