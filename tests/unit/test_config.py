"""DedupConfig: defaults, settings and environment, clear errors."""

from __future__ import annotations

import pytest

from dedup.config import DedupConfig


def test_defaults_and_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.setenv("MONGO_URI", "mongodb://db.example:27017/")
    settings = {"DEDUP_MAX_DISTANCE": "2", "DEDUP_DEBUG": "true", "DEDUP_CAPACITY": 5000,
                "DEDUP_FLUSH_SECONDS": "0.5", "REDIS_URL": "redis://r:6379/1"}
    config = DedupConfig.from_settings(lambda name, default: settings.get(name, default))
    assert (config.max_distance, config.debug, config.capacity, config.flush_seconds) == \
        (2, True, 5000, 0.5)
    assert config.redis_url == "redis://r:6379/1"  # the setting wins over the environment
    assert config.mongo_uri == "mongodb://db.example:27017/"  # from the environment
    assert DedupConfig().max_distance == 3 and DedupConfig().namespace == "simcrawl"


@pytest.mark.parametrize("name,value,message", [
    ("DEDUP_MAX_DISTANCE", "40", "DEDUP_MAX_DISTANCE must be in 0..31"),
    ("DEDUP_MAX_DISTANCE", "three", "DEDUP_MAX_DISTANCE must be an integer"),
    ("DEDUP_DEBUG", "maybe", "DEDUP_DEBUG must be true or false"),
    ("DEDUP_BATCH_SIZE", "0", "DEDUP_BATCH_SIZE must be in 1..10000"),
    ("DEDUP_BATCH_WAIT", "-1", r"DEDUP_BATCH_WAIT must be in \[0, 60\]"),
    ("DEDUP_NAMESPACE", "a b", "namespace must be"),
    ("DEDUP_DATABASE", "my.db", "DEDUP_DATABASE must be a MongoDB database name"),
])
def test_bad_values_name_the_setting(name: str, value: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        DedupConfig.from_settings(lambda n, d: value if n == name else d)


def test_what_simcrawl_writes_of_a_crawl_is_its_owners_only(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A data folder that exists already open to others is made private; the progress
    file the crawl rewrites for ./simcrawl's live line is the owner's only."""
    import json
    import os

    from scrapy.utils.test import get_crawler

    from crawler.extensions import ProgressFile
    from dedup.adapters.servers.services import private_folder

    folder = tmp_path / "data"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    private_folder(folder)
    assert oct(folder.stat().st_mode & 0o777) == "0o700"
    progress = ProgressFile(get_crawler(), tmp_path / "progress.json", 1.0)
    old = os.umask(0o022)  # the usual umask: a plain file would be 0644
    try:
        progress.write()
    finally:
        os.umask(old)
    assert oct((tmp_path / "progress.json").stat().st_mode & 0o777) == "0o600"
    assert "fetched" in json.loads((tmp_path / "progress.json").read_text())


def test_a_database_has_its_own_index_namespace_unless_one_is_named() -> None:
    """``DEDUP_DATABASE`` alone gives the crawl its own index: a second database never
    shares the first's (its start page would be an exact copy of a page it does not
    hold); ``DEDUP_NAMESPACE`` still names one, and a name no namespace can take asks
    for one."""
    from dedup.config import namespace_of

    def config(**settings: str) -> DedupConfig:
        return DedupConfig.from_settings(settings.get)

    assert config().namespace == "simcrawl"
    assert config(DEDUP_DATABASE="mysites").namespace == "mysites"
    assert config(DEDUP_DATABASE="simcrawl_demo").namespace == "demo"
    assert config(DEDUP_DATABASE="mysites", DEDUP_NAMESPACE="shared").namespace == "shared"
    assert DedupConfig(database="mysites").namespace == "mysites"
    with pytest.raises(ValueError, match="DEDUP_NAMESPACE"):
        config(DEDUP_DATABASE="sites-é")
    assert namespace_of("sites-é", "sites") == "sites"


def test_a_name_that_does_nothing_is_named_with_the_closest_known_one() -> None:
    """A mistyped setting was accepted silently; so was one given the other way than it
    is read."""
    from dedup.config import unknown
    from dedup.setting_names import ENVIRONMENT, SETTING

    said = unknown(["DEDUP_MAX_DISTANC", "DEDUP_MAX_DISTANCE", "DOWNLOAD_DELAY",
                    "SIMCRAWL_FRONTEIR", "SIMCRAWL_LOG_LEVEL"], SETTING)
    assert said == [
        "DEDUP_MAX_DISTANC is not a simcrawl setting and does nothing; did you mean "
        "DEDUP_MAX_DISTANCE?",
        "SIMCRAWL_FRONTEIR is not a simcrawl setting and does nothing; did you mean "
        "SIMCRAWL_FRONTIER?",
        "SIMCRAWL_LOG_LEVEL is read from the environment only: as a setting it does "
        "nothing (set it in the environment: SIMCRAWL_LOG_LEVEL=... ./simcrawl ...)"]
    said = unknown(["DEDUP_MAX_DISTANCE", "SIMCRAWL_DATA", "SIMCRAWL_FRONTIER", "HOME",
                    "SIMCRAWL_BENCH_TRAFILATURA"], ENVIRONMENT)
    assert said == ["DEDUP_MAX_DISTANCE is a Scrapy setting, not read from the environment: "
                    "it does nothing there (-s DEDUP_MAX_DISTANCE=... or the project's "
                    "settings)"]


def test_the_decisions_rules_default_to_the_crawls_settings() -> None:
    """:class:`dedup.decide.Rules` has defaults of its own for callers without a
    configuration (the benchmarks, the batch job's judges): they are the crawl's."""
    from dataclasses import replace

    from dedup.decide import Rules

    crawl = Rules.from_config(DedupConfig())
    assert replace(crawl, fingerprint_options={}) == Rules()
