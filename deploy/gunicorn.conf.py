"""gunicorn settings for the web process.

preload_app: the configuration and the database are checked once in the master, so a bad start stops
the server with a non-zero exit instead of respawning workers that fail the same way forever.
"""

import os
from typing import Any

bind = f"{os.environ.get('DWS_WEB_HOST', '127.0.0.1')}:{os.environ.get('DWS_WEB_PORT', '8000')}"
workers = int(os.environ.get("DWS_WEB_WORKERS", "3"))
preload_app = True
graceful_timeout = 30
timeout = 30
# Forwarded headers: gunicorn would take SCRIPT_NAME and PATH_INFO from a header, and the scheme from
# X-Forwarded-Proto, from any peer in forwarded_allow_ips (loopback by default). dws decides the scheme
# itself (DWS_TRUSTED_PROXIES, dws_project/forwarded.py) and is always served at the root.
forwarder_headers = ""
secure_scheme_headers: dict[str, str] = {}
accesslog = "-"
errorlog = "-"


def child_exit(server: Any, worker: Any) -> None:  # gunicorn's Arbiter and Worker; gunicorn ships no types
    """Metrics (multiprocess mode): a gone worker's live gauges leave the scrape; its counters stay."""
    from dws_project import metrics

    metrics.process_exited(worker.pid)
