"""``python -m crawler.cli``: the ``simcrawl`` command (see :mod:`crawler.cli.main`)."""

import sys

from crawler.cli.main import main

sys.exit(main())
