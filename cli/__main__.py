"""``python -m cli``: the ``simcrawl`` command (see :mod:`cli.main`)."""

import sys

from cli.main import main

sys.exit(main())
