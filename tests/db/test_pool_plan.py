"""Each replica's share of PostgreSQL's connections (``db.engine.pool_plan``, ELITR_REPLICAS):
one replica keeps the single-server pool, replicas together stay under max_connections, and a
count that cannot fit is refused naming the max_connections it needs."""

from __future__ import annotations

import pytest

from db.engine import (
    MIN_CONNECTIONS,
    POOL_OPTIONS,
    SPARE_CONNECTIONS,
    dispose_engines,
    get_engine,
    pool_plan,
)
from elitr_core.errors import UserError


@pytest.mark.parametrize("count", [1, 2, 3, 4, 8, 17])
def test_replicas_together_stay_under_max_connections(count: int) -> None:
    plan = pool_plan(100, 3, count)
    each = plan["pool_size"] + plan["max_overflow"]
    assert MIN_CONNECTIONS <= each <= POOL_OPTIONS["pool_size"] + POOL_OPTIONS["max_overflow"]
    assert count * each + 3 + SPARE_CONNECTIONS <= 100
    assert plan["pool_size"] <= POOL_OPTIONS["pool_size"]


def test_one_replica_keeps_the_single_server_pool() -> None:
    assert pool_plan(100, 3, 1) == {"pool_size": 20, "max_overflow": 40}
    assert pool_plan(100, 3, 2) == {"pool_size": 20, "max_overflow": 23}  # 2 x 43 + 13 = 99


def test_a_count_that_cannot_fit_is_refused_with_the_fix() -> None:
    with pytest.raises(UserError, match=r"set max_connections = 163 or more"):
        pool_plan(100, 3, 30)


def test_the_engine_reads_the_server_limits(pg_url: str, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    dispose_engines()
    monkeypatch.setenv("ELITR_REPLICAS", "2")
    engine = get_engine(pg_url)
    max_connections = engine.connect().exec_driver_sql("SHOW max_connections").scalar()
    pool = engine.pool
    total = pool.size() + pool._max_overflow  # type: ignore[attr-defined]
    assert 2 * total + SPARE_CONNECTIONS <= int(str(max_connections))
    dispose_engines()
    monkeypatch.setenv("ELITR_REPLICAS", "1000")
    with pytest.raises(UserError, match="1000 server replicas"):
        get_engine(pg_url)
    dispose_engines()
