"""See what a crawl found: the export of the store's records, the report, the calibration
and the web console. An application over the :mod:`dedup` library that reads the store
through :class:`dedup.store.reads.StoreReads`; the crawl itself never imports it, nor it
the crawl (``tests/unit/test_imports.py``)."""
