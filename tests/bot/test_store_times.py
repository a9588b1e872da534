"""The store's time text: what `isoformat` writes, fixed width, whichever second came before."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta, timezone

from bot.store.sqlite.times import time_text


def expected(value: datetime) -> str:
    return value.astimezone(UTC).isoformat(timespec="microseconds")


def test_it_writes_what_isoformat_writes_with_microseconds_always() -> None:
    moments = [
        datetime(2026, 12, 6, 23, 7, 42, 280786, tzinfo=UTC),
        datetime(2026, 12, 6, 23, 7, 42, 0, tzinfo=UTC),  # isoformat alone would leave the microseconds out
        datetime(2026, 12, 6, 23, 7, 42, 999999, tzinfo=UTC),
        datetime(2026, 12, 6, 23, 7, 43, 1, tzinfo=UTC),
        datetime(1, 1, 1, 0, 0, 0, 5, tzinfo=UTC),
        datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(2026, 12, 7, 1, 7, 42, 12, tzinfo=timezone(timedelta(hours=2))),  # the same second, at +02:00
        datetime(2026, 3, 29, 12, 0, 0, 7),  # naive: local time, as astimezone takes it
    ]
    for moment in moments:
        assert time_text(moment) == expected(moment)


def test_a_later_second_is_not_written_with_an_earlier_seconds_text() -> None:
    start = datetime(2026, 12, 6, 23, 59, 59, 999999, tzinfo=UTC)
    for step in (timedelta(0), timedelta(microseconds=1), timedelta(days=1), timedelta(seconds=-1), timedelta(0)):
        moment = start + step
        assert time_text(moment) == expected(moment)
        start = moment


def test_text_order_is_time_order() -> None:
    rng = random.Random(7)
    base = datetime(2026, 1, 1, tzinfo=UTC)
    moments = [base + timedelta(microseconds=rng.randrange(10**13)) for _ in range(2000)]
    assert sorted(moments, key=time_text) == sorted(moments)
