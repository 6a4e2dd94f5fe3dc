"""URL routes: probes, the admin, the delphi API and the donation page."""

from django.contrib import admin
from django.urls import path

from affiliates.apis import AffiliateCodeApi, AffiliateDonationApi, WalletConnectionApi
from crawlers.proof_apis import ProofApi, donations_csv, verifier_script
from donations.apis import DonationDataApi, StakeApi, TokenPriceApi, UnstakeApi, UserDataApi
from dws_project import health
from dws_project.metrics_view import metrics_endpoint
from dws_project.openapi import SchemaView
from prices.apis import EthPriceApi
from web import views as web_views
from web.proof_page import proof_page

urlpatterns = [
    path("live", health.live, name="live"),
    path("ready", health.ready, name="ready"),
    path("version", health.version, name="version"),
    path("health", health.health, name="health"),
    path("metrics", metrics_endpoint, name="metrics"),  # operator networks only
    path("admin/", admin.site.urls),
    # the donation page (web app)
    path("", web_views.index, name="index"),
    path("donate", web_views.index, name="donate"),  # seed 000's referral link form, /donate?afc=CODE
    # delphi (see docs/api.md)
    path("user/data/<str:address>", UserDataApi.as_view(), name="user-data"),
    path("donation/data", DonationDataApi.as_view(), name="donation-data"),
    path("price/eth", EthPriceApi.as_view(), name="price-eth"),
    path("price/token", TokenPriceApi.as_view(), name="price-token"),
    path("affiliate/code", AffiliateCodeApi.as_view(), name="affiliate-code"),
    path("wallet/connection", WalletConnectionApi.as_view(), name="wallet-connection"),
    path("affiliate/donation", AffiliateDonationApi.as_view(), name="affiliate-donation"),
    path("user/stake", StakeApi.as_view(), name="user-stake"),
    path("user/unstake", UnstakeApi.as_view(), name="user-unstake"),
    path("openapi.json", SchemaView.as_view(), name="openapi"),
    # the public proof of completeness (see docs/proof.md)
    path("proof", proof_page, name="proof"),
    path("proof.json", ProofApi.as_view(), name="proof-json"),
    path("proof/donations.csv", donations_csv, name="proof-donations-csv"),
    path("proof/verify.py", verifier_script, name="proof-verifier"),
]

# Django's own error pages answer in delphi's numbered error shape.
handler400 = "dws_project.api_errors.handler400"
handler403 = "dws_project.api_errors.handler403"
handler404 = "dws_project.api_errors.handler404"
handler500 = "dws_project.api_errors.handler500"
