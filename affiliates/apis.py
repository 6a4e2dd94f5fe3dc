"""delphi's signed affiliate endpoints: thin shells over affiliates.services."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from affiliates import services
from affiliates.models import AttributionStatus
from dws_project import api_errors
from dws_project.api_base import SignedApi, StrictRegexField, error_responses, signed_body_errors

_CODE = r"^[A-Za-z0-9]{1,16}$"


class AffiliateCodeApi(SignedApi):
    """The caller's affiliate code, created on the first call once a donation of the caller has been seen
    (signed: "affiliate code, <address>, <ts>")."""

    @extend_schema_serializer(component_name="AffiliateCodeOutput")
    class OutputSerializer(serializers.Serializer):
        code = serializers.CharField(help_text="the caller's affiliate code")

    @extend_schema(
        operation_id="affiliate_code",
        request=None,
        responses={
            200: OutputSerializer,
            **error_responses(api_errors.SIGNATURE_REJECTED, api_errors.NO_DONATION_SEEN),
        },
    )
    def post(self, request: Request) -> Response:
        code = services.affiliate_code_get_or_create(address=self.signer(request))
        return Response(self.OutputSerializer({"code": code}).data)


class WalletConnectionApi(SignedApi):
    """Record that the caller arrived through a referrer's code (signed: "wallet connection, <address>, <ts>")."""

    @extend_schema_serializer(component_name="WalletConnectionInput")
    class InputSerializer(serializers.Serializer):
        code = StrictRegexField(_CODE, max_length=16, help_text="the referrer's affiliate code")

    @extend_schema_serializer(component_name="WalletConnectionOutput")
    class OutputSerializer(serializers.Serializer):
        address = serializers.CharField()
        code = serializers.CharField(source="affiliate_code")
        created_at = serializers.DateTimeField()

    @extend_schema(
        operation_id="wallet_connection",
        request=InputSerializer,
        responses={
            200: OutputSerializer,
            **signed_body_errors(
                api_errors.SELF_REFERRAL,
                api_errors.UNKNOWN_AFFILIATE_CODE,
            ),
        },
    )
    def post(self, request: Request) -> Response:
        connection = services.wallet_connection_create(address=self.signer(request), code=self.body(request)["code"])
        return Response(self.OutputSerializer(connection).data)


class AffiliateDonationApi(SignedApi):
    """Attribute the caller's donation to an affiliate code (signed: "affiliate donation, <address>, <ts>")."""

    @extend_schema_serializer(component_name="AffiliateDonationInput")
    class InputSerializer(serializers.Serializer):
        tx_hash = StrictRegexField(r"^0x[0-9a-fA-F]{64}$", max_length=66)
        code = StrictRegexField(_CODE, max_length=16)
        chain = StrictRegexField(
            r"^[a-z][a-z0-9]{0,15}$",
            max_length=16,
            required=False,
            help_text="the chain it was sent on, as /donation/data's `chains` names it (default: the first)",
        )

    @extend_schema_serializer(component_name="AffiliateDonationOutput")
    class OutputSerializer(serializers.Serializer):
        chain = serializers.CharField()
        tx_hash = serializers.CharField()
        code = serializers.CharField(source="affiliate_code")
        status = serializers.ChoiceField(
            choices=AttributionStatus.choices,
            help_text="pending until the donation is recorded; attributed once its donor is the signer",
        )

    @extend_schema(
        operation_id="affiliate_donation",
        request=InputSerializer,
        responses={
            200: OutputSerializer,
            **signed_body_errors(
                api_errors.SELF_REFERRAL,
                api_errors.NOT_THE_DONOR,
                api_errors.UNKNOWN_AFFILIATE_CODE,
                api_errors.ATTRIBUTION_CONFLICT,
                api_errors.UNKNOWN_CHAIN,
            ),
        },
    )
    def post(self, request: Request) -> Response:
        claim = services.affiliate_donation_claim(signer=self.signer(request), **self.body(request))
        return Response(self.OutputSerializer(claim).data)
