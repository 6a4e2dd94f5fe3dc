"""The signed-request check as a DRF authentication class, used by every signed delphi endpoint."""

from __future__ import annotations

from django.conf import settings
from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.request import Request

from affiliates import signing
from dws_project.api_errors import SIGNATURE_REJECTED, SIGNATURE_UNVERIFIABLE, ApiException


class SignedRequestAuthentication(BaseAuthentication):
    """Authenticates `delphi-key`/`delphi-ts`/`delphi-signature`; any failure is the same 401."""

    def authenticate(self, request: Request) -> tuple[signing.SignedCaller, None]:
        headers = request.headers
        key = headers.get(signing.KEY_HEADER, "")
        ts = headers.get(signing.TS_HEADER, "")
        signature = headers.get(signing.SIGNATURE_HEADER, "")
        try:
            address = signing.verify(
                path=request.path_info,  # the routed path: the endpoint the signature is for
                key=key,
                ts=ts,
                signature=signature,
                max_age=settings.CONFIG.max_timestamp_age,
                # contract wallets: checked on every chain (user_data is one record per address across them)
                rpc_urls=[chain.rpc_url for chain in settings.CONFIG.chains],
            )
        except signing.SignatureRejected as reason:
            signing.log_rejection(reason, signature, request.path_info)
            raise AuthenticationFailed(SIGNATURE_REJECTED.message) from None
        except signing.SignatureUnverifiable as reason:
            signing.log_rejection(reason, signature, request.path_info)
            raise ApiException(SIGNATURE_UNVERIFIABLE) from None
        return signing.SignedCaller(address), None

    def authenticate_header(self, request: Request) -> str:
        # Present so DRF answers 401 (not 403) when authentication fails.
        return 'delphi-signature realm="delphi"'
