"""The decision's cases of tests/decision_cases.py on a real Redis Cluster: the index
spread over its slots (:class:`dedup.adapters.sharded.ShardedIndex`, numbered pending entries), the
registry and journals in the slot of the namespace's hash tag, the facts from MongoDB:
the same verdicts as on one Redis node and on memory stores."""

from __future__ import annotations

import pytest
from decision_cases import *  # the shared cases, collected here
from test_decide_servers import ServerWorld

from dedup.adapters.index import ClusterStore
from dedup.adapters.servers.services import connect_redis

pytestmark = pytest.mark.integration


@pytest.fixture
def world(redis_cluster, pages, namespace):  # type: ignore[no-untyped-def]
    w = ServerWorld(connect_redis(redis_cluster), pages, "{" + namespace + "}")
    assert isinstance(w.tables, ClusterStore)
    yield w
    w.tables.clear()
