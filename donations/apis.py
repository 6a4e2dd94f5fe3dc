"""delphi endpoints for donors and the campaign: thin shells over donations.selectors and staking."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from donations import selectors, staking
from donations.models import ASSETS, CampaignStatus, DonationStatus, StakeStatus
from donations.refund_models import RefundStatus
from dws_project import api_errors
from dws_project.api_base import (
    PublicApi,
    SignedApi,
    StrictRegexField,
    amount_field,
    error_responses,
    signed_body_errors,
    whole_field,
)
from dws_project.api_errors import ApiException
from dws_project.config_values import parse_address
from prices.apis import PriceSerializer

# Max-age of the polled answers. Donor and campaign figures change at most once a finalized block
# (~12 s); a few seconds of reuse absorbs bursts without showing a donor stale totals for long.
USER_DATA_MAX_AGE = 5
DONATION_DATA_MAX_AGE = 10
TOKEN_PRICE_MAX_AGE = 10  # the token price moves only with a finalized block


class DonationRefundSerializer(serializers.Serializer):
    status = serializers.ChoiceField(
        choices=RefundStatus.choices, help_text="owed: to be paid back; paid: refunded (tx_hash); waived: not paid"
    )
    amount = serializers.CharField(help_text="what is paid back, in the donation's asset, decimal string")
    tx_hash = serializers.CharField(allow_null=True, help_text="the treasury's transaction that paid it; null until")


class DonationSerializer(serializers.Serializer):
    tx_hash = serializers.CharField()
    asset = serializers.ChoiceField(choices=ASSETS)
    amount = amount_field("decimal string at the column's 10 decimals")
    usd_amount = amount_field("USD, decimal string, 2 decimals")
    price = amount_field("token price applied, USD, 5 decimals")
    tokens = whole_field("whole tokens, as a string")
    status = serializers.ChoiceField(choices=DonationStatus.choices)
    ts = serializers.CharField(help_text="block time, UTC, e.g. 2023-10-21T07:38:36Z")
    chain = serializers.CharField(help_text='the chain it was sent on, as DWS_CHAINS names it (e.g. "eth", "base")')
    block_number = serializers.IntegerField(help_text="the block holding it (finalized once confirmed)")
    eth_price = serializers.CharField(
        allow_null=True, help_text="ETH price applied, USD, decimal string, 8 decimals; null for a coin"
    )
    seen_at = serializers.CharField(help_text="when the crawlers first recorded it, UTC, e.g. 2023-10-21T07:38:50Z")
    confirmed_at = serializers.CharField(allow_null=True, help_text="when it was confirmed, UTC; null until then")
    block_replaced = serializers.BooleanField(
        help_text="true while it is unconfirmed and the finalized chain has another block at its block's height "
        "(a re-org replaced it): it may still be mined again, and it is not in the campaign's pending figures"
    )
    refund = DonationRefundSerializer(
        allow_null=True,
        help_text="null, or the refund owed for it (confirmed at 0 tokens: the sale was closed) and, once the "
        "treasury paid it, the paying transaction",
    )


class UserSummarySerializer(serializers.Serializer):
    total = amount_field("USD of the confirmed donations, decimal string")
    tokens = whole_field("tokens of the confirmed donations, whole, as a string")
    staked = whole_field("of `tokens`, how many are staked")
    reward = whole_field("reward tokens")
    status = serializers.ChoiceField(choices=StakeStatus.choices)
    unstake_completes_at = serializers.CharField(allow_null=True, help_text="when unstaking ends; null otherwise")
    ts = serializers.CharField(allow_null=True, help_text="last change of the record; null without one")


class StableCoinSerializer(serializers.Serializer):
    asset = serializers.CharField()
    contract = serializers.CharField(help_text="ERC-20 contract, lower case")
    decimals = serializers.IntegerField()


class ChainSerializer(serializers.Serializer):
    chain = serializers.CharField(help_text="the chain's name, as DWS_CHAINS names it")
    chain_id = serializers.IntegerField(help_text="the chain id a wallet must be on to donate there")
    # DRF's metaclass takes declared fields out of the class, so this never shadows Field.label at run time.
    label = serializers.CharField(help_text="what the page calls it, e.g. Base")  # type: ignore[assignment]
    donation_address = serializers.CharField(help_text="where donations go on this chain, lower case")
    stable_coins = StableCoinSerializer(many=True, help_text="its coins (its own contracts); empty: ETH only")


class UserDataApi(PublicApi):
    """A donor's donations (oldest first, paginated) and totals; defaults for an address that never donated."""

    cache_seconds = USER_DATA_MAX_AGE

    @extend_schema_serializer(component_name="UserDataInput")
    class InputSerializer(serializers.Serializer):
        limit = serializers.IntegerField(
            min_value=1, default=selectors.DEFAULT_PAGE, help_text="page size; values above 100 are capped at 100"
        )
        offset = serializers.IntegerField(min_value=0, max_value=10**9, default=0)

    @extend_schema_serializer(component_name="UserDataOutput")
    class OutputSerializer(serializers.Serializer):
        donations = DonationSerializer(many=True, help_text="oldest first; empty past the end")
        user_data = UserSummarySerializer()

    @extend_schema(
        operation_id="user_data",
        parameters=[
            OpenApiParameter(
                "address",
                str,
                OpenApiParameter.PATH,
                required=True,
                pattern=r"^0x[0-9a-fA-F]{40}$",
                description="the donor's address; mixed case must carry a valid EIP-55 checksum",
            ),
            InputSerializer,
        ],
        responses={200: OutputSerializer, **error_responses(api_errors.INVALID_ADDRESS, api_errors.INVALID_REQUEST)},
    )
    def get(self, request: Request, address: str) -> Response:
        try:
            address = parse_address(address)
        except ValueError:
            raise ApiException(api_errors.INVALID_ADDRESS) from None
        params = self.InputSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        # The selectors return the wire shape already (strings at the column scales); OutputSerializer
        # documents it for /openapi.json, and the schemathesis test holds the two together. Running it
        # on every poll would cost a third of the request (DRF deep-copies its fields per instance).
        return Response(
            {
                "donations": selectors.user_donations(address=address, **params.validated_data),
                "user_data": selectors.user_summary(address=address),
            }
        )


class DonationDataApi(PublicApi):
    """The campaign: raised, sold, status, current tier and price, cap, and where and how to donate."""

    cache_seconds = DONATION_DATA_MAX_AGE

    @extend_schema_serializer(component_name="DonationDataOutput")
    class OutputSerializer(serializers.Serializer):
        total = amount_field("USD raised (confirmed), decimal string")
        tokens = whole_field("tokens sold (confirmed), whole, as a string")
        status = serializers.ChoiceField(choices=CampaignStatus.choices)
        token_price = amount_field("USD per token in the current tier")
        tier = serializers.IntegerField(help_text="current tier, 1-based")
        tier_limit = whole_field("tokens sold at which the current tier ends")
        sale_cap = whole_field("the sale's token cap (the last tier's limit)")
        tokens_beyond_cap = whole_field(
            'confirmed tokens above the cap, "0" when none: the donation that crosses the cap is credited whole'
        )
        donation_address = serializers.CharField(help_text="where donations are sent on the first chain, lower case")
        stable_coins = StableCoinSerializer(many=True, help_text="the first chain's coins")
        chains = ChainSerializer(many=True, help_text="every chain donations are taken on, in DWS_CHAINS order")
        ts = serializers.CharField(help_text="last change of the campaign figures")
        pending_total = amount_field(
            "USD of the donations seen and not yet confirmed, across chains, decimal string (none whose block a "
            're-org replaced); "0.00" when none'
        )
        pending_donations = serializers.IntegerField(help_text="how many donations `pending_total` adds up")

    @extend_schema(operation_id="donation_data", responses={200: OutputSerializer, **error_responses()})
    def get(self, request: Request) -> Response:
        return Response(selectors.donation_data())  # already the wire shape; see UserDataApi.get


class StakeApi(SignedApi):
    """Stake more of the caller's confirmed, unstaked tokens (signed: "user stake, <address>, <ts>")."""

    @extend_schema_serializer(component_name="StakeInput")
    class InputSerializer(serializers.Serializer):
        amount = StrictRegexField(r"^[1-9][0-9]{0,17}$", max_length=18, help_text="whole tokens to stake, as a string")

    @extend_schema_serializer(component_name="StakeOutput")
    class OutputSerializer(serializers.Serializer):
        user_data = UserSummarySerializer()

    @extend_schema(
        operation_id="user_stake",
        request=InputSerializer,
        responses={
            200: OutputSerializer,
            **signed_body_errors(
                api_errors.NOT_A_DONOR,
                api_errors.INSUFFICIENT_TOKENS,
                api_errors.STAKE_WHILE_UNSTAKING,
            ),
        },
    )
    def post(self, request: Request) -> Response:
        staking.stake_add(address=self.signer(request), amount=int(self.body(request)["amount"]))
        return Response(self.OutputSerializer({"user_data": selectors.user_summary(address=self.signer(request))}).data)


class UnstakeApi(SignedApi):
    """Start the 7-day unstaking of everything staked (signed: "user unstake, <address>, <ts>")."""

    @extend_schema_serializer(component_name="UnstakeOutput")
    class OutputSerializer(serializers.Serializer):
        user_data = UserSummarySerializer()

    @extend_schema(
        operation_id="user_unstake",
        request=None,
        responses={
            200: OutputSerializer,
            **error_responses(api_errors.SIGNATURE_REJECTED, api_errors.NOT_A_DONOR, api_errors.NOTHING_STAKED),
        },
    )
    def post(self, request: Request) -> Response:
        staking.unstake_request(address=self.signer(request))
        return Response(self.OutputSerializer({"user_data": selectors.user_summary(address=self.signer(request))}).data)


class TokenPriceApi(PublicApi):
    """The current tier's token price, derived from the confirmed tokens sold."""

    cache_seconds = TOKEN_PRICE_MAX_AGE

    @extend_schema(operation_id="price_token", responses={200: PriceSerializer, **error_responses()})
    def get(self, request: Request) -> Response:
        return Response(selectors.current_token_price())
