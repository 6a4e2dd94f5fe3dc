"""WSGI entry point for the web process (gunicorn dws_project.wsgi, preloaded)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dws_project.settings")

application = get_wsgi_application()

from dws_project.startup import check_database, check_redis_eviction  # noqa: E402 - needs the settings

check_database("web")
check_redis_eviction("web")
