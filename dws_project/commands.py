"""The base of the commands that run the system's periodic jobs (crawlers, prices, reconcile)."""

from __future__ import annotations

from django.core.management.base import BaseCommand


class JobCommand(BaseCommand):
    """A command that reads the chain or the venues and writes the database, never serves a request.

    Django's system checks would import the URL configuration, and with it the delphi views and the
    signing library (about 0.4 s), before every run of a job that uses neither. The configuration is
    still validated in full when settings load, and the database is checked at start by manage.py.
    """

    requires_system_checks: list[str] = []
