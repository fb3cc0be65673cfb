"""Build the Cython kernel of dedup.

The kernel hashes features with XXH3-64 from the xxHash C library. It is taken from the
system's xxHash development header (Debian/Ubuntu: ``libxxhash-dev``; Fedora:
``xxhash-devel``; macOS: ``brew install xxhash``), compiled inline (``XXH_INLINE_ALL``) so
no shared library is linked. ``XXHASH_INCLUDE`` names another folder that holds
``xxhash.h``. Without the header the build stops with that advice: we do not carry a
copy of xxHash's source.
"""

import os
import sys
from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, setup

HEADER_DIRS = [os.environ.get("XXHASH_INCLUDE", ""), "/usr/include", "/usr/local/include",
               "/opt/homebrew/include", str(Path(sys.prefix) / "include")]


def xxhash_include() -> str:
    for folder in HEADER_DIRS:
        if folder and (Path(folder) / "xxhash.h").is_file():
            return folder
    sys.exit(
        "simcrawl: xxhash.h (xxHash >= 0.8) not found. Install the xxHash development "
        "package (Debian/Ubuntu: apt-get install libxxhash-dev) or set XXHASH_INCLUDE "
        "to the folder that holds xxhash.h."
    )


extensions = [
    Extension(
        "dedup._simhash",
        ["dedup/_simhash.pyx"],
        include_dirs=[xxhash_include()],
        define_macros=[("XXH_INLINE_ALL", "1")],
        extra_compile_args=["-O3"],
    ),
    Extension("dedup._pinyin", ["dedup/_pinyin.pyx"], extra_compile_args=["-O3"]),
]

setup(
    ext_modules=cythonize(
        extensions,
        compiler_directives={
            "language_level": "3",
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
        },
    )
)
