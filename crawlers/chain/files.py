"""Files the crawlers keep: the block cache's copies and the debug store's raw answers, owner-only.

DWS_DEBUG_DATA_STORE keeps raw provider answers for replay; a failed write there never stops a crawl.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from pathlib import Path

from dws_project.chain_settings import ChainSettings

logger = logging.getLogger("dws.crawlers")


def write_private(directory: str, name: str, text: str) -> None:
    """Write `directory/name` readable by its owner only (0600), creating the directory on first use.

    Written to a temporary name and renamed, so a reader (or a crash) never sees half a file.
    """
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    temporary = folder / f".{name}.{os.getpid()}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # an existing file keeps its mode through O_CREAT; the umask may widen it
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
    os.replace(temporary, target)


def debug_dump(chain: ChainSettings, name: str, payload: object) -> None:
    """DWS_DEBUG_DATA_STORE: keep a raw provider answer for replay; a failed write never stops a crawl."""
    if not chain.debug_data_store:
        return
    try:
        write_private(chain.debug_data_store, name, json.dumps(payload))
    except (OSError, TypeError, ValueError) as exc:
        logger.warning("debug data store: could not write %s: %s", name, type(exc).__name__)
