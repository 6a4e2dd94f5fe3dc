"""WSGI entry point for the web process (gunicorn dws_project.wsgi, preloaded)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dws_project.settings")

from django.conf import settings

from dws_project.forwarded import forwarded_headers_guard

# A client's SCRIPT_NAME and an untrusted peer's X-Forwarded-Proto never reach Django (forwarded.py).
application = forwarded_headers_guard(get_wsgi_application(), lambda: settings.CONFIG.trusted_proxies)

from dws_project.startup import check_database, check_redis_eviction  # noqa: E402 - needs the settings

check_database("web")
check_redis_eviction("web")
