"""delphi price endpoints the donation page polls."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from dws_project import api_errors
from dws_project.api_base import PublicApi, amount_field, error_responses
from prices import selectors

# The ETH price gets a new row once a minute.
ETH_PRICE_MAX_AGE = 15


class PriceSerializer(serializers.Serializer):
    asset = serializers.CharField()
    price = amount_field("USD, decimal string")
    ts = serializers.CharField(help_text="when this price was taken or took effect, UTC")


class EthPriceApi(PublicApi):
    """The latest ETH price in USD and the minute it is for."""

    cache_seconds = ETH_PRICE_MAX_AGE

    @extend_schema(
        operation_id="price_eth", responses={200: PriceSerializer, **error_responses(api_errors.PRICE_UNAVAILABLE)}
    )
    def get(self, request: Request) -> Response:
        return Response(selectors.latest_eth_price())  # the wire shape; PriceSerializer documents it
