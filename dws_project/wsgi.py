"""WSGI entry point for the web process (gunicorn dws_project.wsgi, preloaded)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dws_project.settings")

application = get_wsgi_application()

from dws_project.startup import check_database  # noqa: E402 - needs the settings loaded above

check_database("web")
