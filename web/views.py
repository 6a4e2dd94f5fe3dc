"""The one-page donation site: the page shell with the sale's static facts; the browser does the rest.

Where the money goes on each network the page offers (the donation address, the coin contracts, the chain
id) is rendered from the server's configuration, shown to the donor, and is what the page's scripts send to.
A chain refused for its donation address (a Safe not deployed there), or sharing its address with a chain
whose code was never read, is not offered: the modes the crawlers read are kept in PostgreSQL
(crawlers/runs/address_code.py), and with the database away no chain sharing an address is offered (fail
closed, as the crawlers hold).

Everything that changes (campaign figures, prices, a donor's history) is fetched by the page from the
delphi API, so this view reads at most that one small table and the page renders even while the database
is away.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from crawlers.runs.address_code import refused_chains
from web import presentation

# The page loads only its own scripts, styles and API; wallets inject their provider themselves.
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    ]
)


@require_safe
def index(request: HttpRequest) -> HttpResponse:
    context = presentation.page_context(settings.CONFIG, refused=refused_chains())
    response = render(request, "web/index.html", context)
    response["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    return response
