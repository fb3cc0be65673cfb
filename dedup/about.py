"""What simcrawl is: its version, as the command and the files it writes name it."""

from __future__ import annotations


def version() -> str:
    """simcrawl's version: the installed package's, else (a checkout never installed) the
    one ``pyproject.toml`` beside the package names."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed
    from pathlib import Path

    try:
        return installed("simcrawl")
    except PackageNotFoundError:
        import re

        project = Path(__file__).resolve().parents[1] / "pyproject.toml"
        found = re.search(r'^version = "([^"]+)"', project.read_text("utf-8"), re.MULTILINE) \
            if project.is_file() else None
        return found.group(1) if found else "unknown"
