"""Print the delphi headers for a request signed the way the donation page's wallet signs it."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from affiliates import signing


class Command(BaseCommand):
    help = (
        "Sign a delphi request with the key in DWS_TT_PRIVATE_KEY (never a flag: argv is world-readable) "
        "and print its delphi-key, delphi-ts and delphi-signature headers."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("method", help="HTTP method, e.g. POST")
        parser.add_argument("path", help="request path, e.g. /affiliate/code")
        parser.add_argument("body", nargs="?", help="JSON body (checked, not signed)")

    def handle(self, *args: Any, method: str, path: str, body: str | None, **options: Any) -> None:
        key = settings.CONFIG.tt_private_key
        if not key:
            raise CommandError("DWS_TT_PRIVATE_KEY is not set")
        if method.upper() not in ("GET", "POST", "PUT", "PATCH", "DELETE"):
            raise CommandError(f"unknown HTTP method {method!r}")
        path = urlsplit(path).path
        if not path.startswith("/"):
            raise CommandError("PATH must start with /")
        if body is not None:
            try:
                json.loads(body)
            except ValueError:
                raise CommandError("BODY is not valid JSON") from None
        for name, value in signing.sign(path, key).items():
            self.stdout.write(f"{name}: {value}")
