"""Starting Spark for the batch job: one clear message when pyspark or Java is missing,
executors that run this interpreter (so they import the installed ``dedup`` and its
compiled kernel), and quiet logs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from typing import Any

#: The default master: every core of this machine.
DEFAULT_MASTER = "local[*]"

#: The Debian command that installs the Java Spark runs on.
JAVA_INSTALL = "apt-get install openjdk-17-jre-headless"


def parse_conf(items: list[str]) -> dict[str, str]:
    """``KEY=VALUE`` settings (``--spark-conf``) as a dict.

    Raises:
        ValueError: an item without ``=`` or with an empty key.
    """
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--spark-conf wants KEY=VALUE, got {item!r}")
        out[key.strip()] = value
    return out


class SparkUnavailable(RuntimeError):
    """Spark cannot start here: pyspark or Java is missing, or the master cannot be
    reached. The message names the fix."""


def java_problem() -> str | None:
    """Why Java cannot run Spark here, or ``None`` when it can (``$JAVA_HOME/bin/java``,
    else ``java`` on the ``PATH``, answering ``-version``)."""
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not java or not os.path.exists(java):
        where = f"$JAVA_HOME/bin/java ({home}) does not exist" if home else \
            "no java on the PATH"
        return f"Spark needs Java 17 or newer, and {where}: install it ({JAVA_INSTALL})"
    try:
        subprocess.run([java, "-version"], capture_output=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{java} -version failed ({exc}): install a working Java ({JAVA_INSTALL})"
    return None


def _driver_address(master: str) -> dict[str, str]:
    """Where the driver listens: loopback for ``local[...]`` and for a master on this
    machine's loopback (results and blocks are fetched from the address the driver
    advertises, which must be one the executors reach); otherwise Spark's default (this
    host's name; ``--spark-conf spark.driver.host=...`` overrides it)."""
    if master.startswith("local") or re.match(r"spark://(127\.0\.0\.1|localhost)[:/]", master):
        return {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}
    return {}


def start(master: str = DEFAULT_MASTER, app: str = "simcrawl-find-all",
          conf: dict[str, str] | None = None) -> Any:
    """A ``SparkSession`` on ``master`` (``local[N]``, ``local[*]`` or ``spark://HOST:7077``).

    The executors run ``sys.executable`` (the interpreter that holds simcrawl), unless
    ``PYSPARK_PYTHON`` names another one: on a cluster of other machines, that is where
    simcrawl must be installed.

    Raises:
        SparkUnavailable: pyspark is not installed, Java is missing, or Spark did not start.
    """
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise SparkUnavailable(
            "the Spark engine needs pyspark: pip install 'simcrawl[spark]' (in the source "
            "tree: SIMCRAWL_EXTRAS=spark ./simcrawl ..., or pip install -e '.[spark]')"
        ) from None
    problem = java_problem()
    if problem:
        raise SparkUnavailable(problem)
    python = os.environ.get("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_PYTHON", python)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.pyspark.python": python,
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.adaptive.enabled": "true",
        **_driver_address(master),
        **(conf or {})}
    builder = SparkSession.builder.master(master).appName(app)
    for key, value in settings.items():
        builder = builder.config(key, value)
    try:
        session = builder.getOrCreate()
    except Exception as exc:
        raise SparkUnavailable(f"Spark did not start on {master}: "
                               f"{str(exc).strip().splitlines()[0]}") from exc
    session.sparkContext.setLogLevel("ERROR")
    if "spark.sql.shuffle.partitions" not in (conf or {}):
        # the job sets its own partitions for the big shuffle; the small ones (clusters,
        # ordering the output) get two per core, not Spark's 200
        session.conf.set("spark.sql.shuffle.partitions",
                         str(2 * session.sparkContext.defaultParallelism))
    return session
