"""The console over a store that stops under it (issue 72: `simcrawl web` showed a bare
"Internal Server Error" after `simcrawl services stop`)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def test_the_console_says_the_store_is_gone_when_its_servers_stop(tmp_path: Path) -> None:
    from crawler.console.app import create_app
    from dedup.adapters.servers.services import EmbeddedServices
    from dedup.adapters.mongo import PageStore, connect_mongo
    from dedup.adapters.mongo.reads import MongoReads

    with EmbeddedServices(tmp_path / "data", redis=False) as services:
        assert services.mongo_uri is not None
        client = connect_mongo(services.mongo_uri, timeout=2.0)
        PageStore(client, "gone").ensure_indexes()
        app = create_app(MongoReads(client["gone"]), figures_folder=tmp_path / "figures",
                         refresh=3600)
        web = app.test_client()
        assert web.get("/").status_code == 200
    # the servers stopped (the last user left), as `simcrawl services stop` stops them
    reply = web.get("/")
    page = reply.get_data(as_text=True)
    assert reply.status_code == 503
    assert "The store does not answer" in page and "simcrawl services" in page
    client.close()
