"""simcrawl's examples (installed as ``crawler.examples``; not product code): the demo
site that ``simcrawl`` with no argument crawls (:mod:`crawler.examples.demosite`: four
hosts on loopback with originals, mirrors, syndicated copies, GBK Chinese pages, traps and
bad input, and the outcome a crawl of it must reach), and the sample documents
``simcrawl scan`` decides by default (the ``.html`` and ``.txt`` files beside this one)."""

from pathlib import Path

#: The folder of the sample documents.
DOCUMENTS = Path(__file__).resolve().parent

#: The order ``simcrawl scan`` decides the sample documents in with no paths given: each
#: original before the pages that copy it (as a crawl meets a site before its mirrors).
SAMPLE_ORDER = ("harbour-original.html", "harbour-mirror.html", "harbour-syndicated.txt",
                "spring-town.zh.txt", "spring-town-copy.gbk.html", "library-hours.html",
                "not-found.html")
