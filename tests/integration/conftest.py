"""Real servers for integration tests: redis-server and SecantusDB on free loopback ports,
started once per test session under a temporary folder. Each test gets its own Redis key
prefix and MongoDB database, so tests do not see each other's data."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from dedup.adapters.index import RedisStore
from dedup.index import MemoryStore
from dedup.adapters.servers.services import EmbeddedServices, connect_mongo, connect_redis
from dedup.adapters.mongo import PageStore
from store_cleanup import drop_test_database


@pytest.fixture(scope="session")
def services(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedServices]:
    svc = EmbeddedServices(tmp_path_factory.mktemp("services")).start()
    yield svc
    svc.stop()


@pytest.fixture(scope="session")
def redis_client(services: EmbeddedServices):  # type: ignore[no-untyped-def]
    assert services.redis_url
    return connect_redis(services.redis_url)


@pytest.fixture(scope="session")
def mongo_client(services: EmbeddedServices):  # type: ignore[no-untyped-def]
    assert services.mongo_uri
    client = connect_mongo(services.mongo_uri)
    yield client
    client.close()


@pytest.fixture
def namespace() -> str:
    return f"test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def pages(mongo_client, namespace: str) -> Iterator[PageStore]:  # type: ignore[no-untyped-def]
    store = PageStore(mongo_client, namespace.replace("-", "_"))
    store.ensure_indexes()
    yield store
    drop_test_database(mongo_client, store.db.name)


@pytest.fixture
def big_pages(mongo_client, namespace: str) -> PageStore:  # type: ignore[no-untyped-def]
    """:func:`pages` for a test that writes thousands of documents: left, not dropped,
    at its end. SecantusDB drops a database row by row (17 s for 3,000 documents with
    two indexes here, past pymongo's 60 s under a neighbour's load); the database goes
    with the session's temporary folder."""
    store = PageStore(mongo_client, namespace.replace("-", "_"))
    store.ensure_indexes()
    return store


class EarlierRedisStore(RedisStore):
    """A Redis store whose new index is laid out as by an earlier simcrawl (layout version
    2: text anchors in sorted sets), which this version still reads and writes."""

    earlier_layout = True

    def create_layout(self, description: dict) -> dict:
        earlier = {k: v for k, v in description.items() if k != "anchors"}
        return super().create_layout({**earlier, "version": 2})


@pytest.fixture(params=["memory", "redis", "redis-earlier-layout"])
def store(request: pytest.FixtureRequest, redis_client, namespace: str):  # type: ignore[no-untyped-def]
    """Each index test runs on both stores, and on an index an earlier version laid out."""
    if request.param == "memory":
        return MemoryStore()
    kind = EarlierRedisStore if request.param == "redis-earlier-layout" else RedisStore
    redis_store = kind(redis_client, namespace)
    request.addfinalizer(redis_store.clear)
    return redis_store


@pytest.fixture(params=["memory", "mongodb"])
def page_store(request, mongo_client, namespace: str):  # type: ignore[no-untyped-def]
    """Each page store test runs in memory and in MongoDB (the embedded SecantusDB)."""
    from dedup.store.memory_pages import MemoryPageStore
    from dedup.adapters.mongo import PageStore

    if request.param == "memory":
        yield MemoryPageStore()
        return
    pages = PageStore(mongo_client, namespace.replace("-", "_"))
    pages.ensure_indexes()
    yield pages
    drop_test_database(mongo_client, pages.db.name)
