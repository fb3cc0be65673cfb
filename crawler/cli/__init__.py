"""The ``simcrawl`` command: one small module per verb (as ``scrapy/commands/`` and pip
do). :mod:`crawler.cli.main` dispatches; each verb module has ``HELP`` (one line for the list of
commands) and ``main(argv, prog) -> int``: it parses its own options and calls the
library (:mod:`dedup`), the crawler (:mod:`crawler`) or the console (:mod:`console`).
Exit statuses are one table for every verb (:data:`dedup.errors.EXIT_STATUSES`)."""
