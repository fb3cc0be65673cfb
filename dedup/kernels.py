"""Which compiled kernels load: one switch and one warning for all.

dedup has three Cython kernels: ``_simhash`` (the simhash) and ``_pinyin`` (the pinyin
fingerprint), each with a pure-Python twin that gives identical results about 100 times
more slowly, and ``_walk`` (the main-text walk over lxml's tree), whose twin
(``dedup.maintext._Blocks``) gives the same blocks about three times more slowly.
``SIMCRAWL_PURE_PYTHON=1`` forces the twins for all. A kernel that does not load (not
built: running from a source tree whose package was installed elsewhere, or a failed
build) is said loudly, on the console as well as in the log, since everything then runs
slower, the fingerprints two orders of magnitude.
"""

from __future__ import annotations

import importlib
import logging
import warnings
from types import ModuleType

from dedup.setting_names import value

log = logging.getLogger(__name__)

#: ``SIMCRAWL_PURE_PYTHON`` is set (to anything but ``0``): use the pure-Python twins.
PURE_PYTHON = value("SIMCRAWL_PURE_PYTHON") not in ("", "0")


class SlowKernelWarning(RuntimeWarning):
    """A compiled kernel could not be loaded; the pure-Python twin runs instead."""


def load(name: str, slower: str = "about 100 times slower") -> ModuleType | None:
    """The compiled kernel ``dedup.<name>``, or ``None`` (forced off, or not built: then
    it warns once, naming the cause, how much slower its twin is, and the fix)."""
    if PURE_PYTHON:
        return None
    try:
        return importlib.import_module(f"dedup.{name}")
    except ImportError as exc:
        message = (f"dedup: the compiled kernel dedup.{name} is not available ({exc}); the "
                   f"pure-Python twin runs instead, {slower}. Build it (pip "
                   "install -e . in the source tree, or run from the installed package, "
                   "not from a source folder) or set SIMCRAWL_PURE_PYTHON=1 to choose this.")
        log.warning(message)
        warnings.warn(message, SlowKernelWarning, stacklevel=2)
        return None
