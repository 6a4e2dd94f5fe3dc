"""gunicorn settings for the web process.

preload_app: the configuration and the database are checked once in the master, so a bad start stops
the server with a non-zero exit instead of respawning workers that fail the same way forever.
"""

import os

bind = f"{os.environ.get('DWS_WEB_HOST', '127.0.0.1')}:{os.environ.get('DWS_WEB_PORT', '8000')}"
workers = int(os.environ.get("DWS_WEB_WORKERS", "3"))
preload_app = True
graceful_timeout = 30
timeout = 30
accesslog = "-"
errorlog = "-"


def child_exit(server: object, worker: object) -> None:
    """Metrics (multiprocess mode): a gone worker's live gauges leave the scrape; its counters stay."""
    from dws_project import metrics

    metrics.process_exited(worker.pid)  # type: ignore[attr-defined]
