"""Imported once by the extraction workers' fork server (:class:`crawler.extraction.Extractor`)
before it forks a worker: it reads a small page (:func:`crawler.extraction.warm_up`), so
that every worker starts with the reading set up (the pinyin tables cost each worker a
quarter of a second at its first page). Importing it anywhere else only costs that once.
"""

from crawler.extraction import warm_up

warm_up()
