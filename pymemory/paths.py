"""Where pymemory keeps per-user files outside a project: the default SQLite store and the
local models that ``pymemory models fetch`` builds."""

from __future__ import annotations

import os
import sys
from pathlib import Path

APP = "pymemory"


def user_data_dir(platform: str | None = None) -> Path:
    """``pymemory`` in the user's data directory: ``$XDG_DATA_HOME`` or ``~/.local/share``
    on Linux, ``~/Library/Application Support`` on macOS, ``%APPDATA%`` on Windows."""
    platform = sys.platform if platform is None else platform
    if platform == "win32":
        base = Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    elif platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        xdg = os.environ.get("XDG_DATA_HOME", "")  # the XDG spec ignores relative paths
        base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".local" / "share"
    return base / APP
