"""See what a crawl found: export of the store's records (and, to come, the report and
the web console). An application over the :mod:`dedup` library, as :mod:`crawler` is;
``dedup`` never imports it."""
