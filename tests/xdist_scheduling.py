"""How the suite is handed to pytest-xdist's workers: which tests stay together and which go first.

In a module of its own: tests/conftest.py uses the hook, and tests/test_xdist_groups.py loads it alone in a small suite
under xdist (tests/conftest.py imports torch and the chain fixtures, which each worker of that small suite would import
again).
"""

from __future__ import annotations

import pytest

SHARED_SCOPES = frozenset({"module", "package", "class"})


def get_schedule_rank(item: pytest.Item) -> int:
    """0: waits minutes of real time by design (`wall`); 1: starts real nodes or takes long (`e2e`, `slow`); 2: the
    rest. Longest first: a wall-bound test started last kept one worker busy for three minutes after the other two had
    run out of work (13-minute suites ended with a minute at under half a core)."""
    if item.get_closest_marker("wall") is not None:
        return 0
    if item.get_closest_marker("e2e") is not None or item.get_closest_marker("slow") is not None:
        return 1
    return 2


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items) -> None:
    """Under pytest-xdist (`make test`: `-n N --dist loadgroup`), tests go to workers one by one in collection order,
    longest first (`get_schedule_rank`; a stable sort, so each module's tests stay in their order), except that the
    tests of a module sharing a module-scoped fixture (one real run several tests assert different things about) stay
    on one worker, so the run is made once. A session fixture (the anvil and deployment) is made once per worker.

    tryfirst: xdist's worker reads the `xdist_group` marks in its own collection hook (it appends the group to each
    test's id, which is what the scheduler groups by); marks added after that hook ran are never seen, and each test of
    such a module went to whichever worker was free, making the module's real run once per worker (tests/
    test_xdist_groups.py)."""
    for item in items:
        fixture_info = getattr(item, "_fixtureinfo", None)
        if fixture_info is None:
            continue
        scopes = {d.scope for defs in fixture_info.name2fixturedefs.values() for d in defs}
        if scopes & SHARED_SCOPES:
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
    items.sort(key=get_schedule_rank)
