"""Build the Cython kernels of dedup (``dedup._simhash``, ``dedup._pinyin`` and
``dedup._walk``).

The simhash kernel hashes features with XXH3-64 from the xxHash C library. It is taken
from the system's xxHash development header (Debian/Ubuntu: ``libxxhash-dev``; Fedora:
``xxhash-devel``; macOS: ``brew install xxhash``), compiled inline (``XXH_INLINE_ALL``) so
no shared library is linked. ``XXHASH_INCLUDE`` names another folder that holds
``xxhash.h``: we do not carry a copy of xxHash's source. The main-text walk reads
libxml2's tree through lxml's public C API, from the headers lxml's own wheel carries
(``lxml.get_include()``), so it needs lxml at build time (the build's requirements name it).

Where a kernel cannot be built (no C compiler, or no ``xxhash.h`` for the simhash), the
package is built without it and says so: its pure-Python twin (same results, about 100
times slower; ``dedup/kernels.py``) runs instead, and simcrawl warns at start-up.
``SIMCRAWL_REQUIRE_KERNELS=1`` makes such a build fail instead (the project's own test
and demo commands set it).
"""

import os
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HEADER_DIRS = [os.environ.get("XXHASH_INCLUDE", ""), "/usr/include", "/usr/local/include",
               "/opt/homebrew/include", str(Path(sys.prefix) / "include")]

#: a build that cannot compile a kernel fails instead of leaving it to its twin
REQUIRED = os.environ.get("SIMCRAWL_REQUIRE_KERNELS", "") not in ("", "0")

DIRECTIVES = {"language_level": "3", "boundscheck": False, "wraparound": False,
              "cdivision": True}


def say(message: str) -> None:
    print(f"simcrawl: {message}", file=sys.stderr)


def xxhash_include() -> str | None:
    for folder in HEADER_DIRS:
        if folder and (Path(folder) / "xxhash.h").is_file():
            return folder
    return None


class OptionalKernels(build_ext):
    """Each kernel compiled if it can be, else left to its
    pure-Python twin, said on the build's output (or fatal with SIMCRAWL_REQUIRE_KERNELS)."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # noqa: BLE001 - no compiler at all (DistutilsPlatformError)
            self._without("every kernel", exc)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:  # noqa: BLE001 - CCompilerError, DistutilsExecError, ...
            self._without(ext.name, exc)

    @staticmethod
    def _without(what: str, exc: Exception) -> None:
        if REQUIRED:
            raise exc
        say(f"could not compile {what} ({exc}); the pure-Python twin runs instead, about "
            "100 times slower. Install a C compiler and xxHash's header (Debian: apt-get "
            "install build-essential libxxhash-dev) and reinstall for the compiled kernels.")


def extensions() -> list[Extension]:
    from Cython.Build import cythonize

    kernels = [Extension("dedup._pinyin", ["dedup/_pinyin.pyx"], extra_compile_args=["-O3"])]
    try:
        import lxml

        kernels.append(Extension("dedup._walk", ["dedup/_walk.pyx"],
                                 include_dirs=lxml.get_include(), extra_compile_args=["-O3"]))
    except ImportError:
        if REQUIRED:
            sys.exit("simcrawl: lxml is not installed where simcrawl is built; the build's "
                     "requirements (pyproject.toml) name it.")
        say("lxml is not installed where simcrawl is built: dedup._walk is not compiled and "
            "the main-text walk runs in Python (dedup.maintext), about three times slower.")
    include = xxhash_include()
    if include is not None:
        kernels.insert(0, Extension("dedup._simhash", ["dedup/_simhash.pyx"],
                                    include_dirs=[include],
                                    define_macros=[("XXH_INLINE_ALL", "1")],
                                    extra_compile_args=["-O3"]))
    elif REQUIRED:
        sys.exit("simcrawl: xxhash.h (xxHash >= 0.8) not found. Install the xxHash "
                 "development package (Debian/Ubuntu: apt-get install libxxhash-dev) or set "
                 "XXHASH_INCLUDE to the folder that holds xxhash.h.")
    else:
        say("xxhash.h (xxHash >= 0.8) not found (Debian/Ubuntu: apt-get install "
            "libxxhash-dev, or XXHASH_INCLUDE=folder): dedup._simhash is not compiled and "
            "its pure-Python twin runs instead, about 100 times slower.")
    return cythonize(kernels, compiler_directives=DIRECTIVES, quiet=True)


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalKernels})
