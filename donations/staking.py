"""Staking: moving a donor's confirmed tokens into `staked` and back out after a 7-day unstaking.

user_data.tokens always equals the sum of the address's confirmed donations (the crawler keeps it so),
so staking never reduces it: it only raises `staked`, and the tokens available to stake are
`tokens - staked`. States (user_data.status):

    none --stake--> staked --stake more--> staked
    staked --unstake--> unstaking (unstake_requested_at = now)
    unstaking --7 days later, beat task--> none (staked = 0)

Every transition is one conditional UPDATE whose WHERE clause is the rule, so two concurrent
requests (or a request racing the beat task) cannot both win; a refusal then reads the row to say why.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import F
from django.db.models.functions import Now
from django.utils import timezone

from donations.models import StakeStatus, UserData
from dws_project.api_errors import (
    INSUFFICIENT_TOKENS,
    NOT_A_DONOR,
    NOTHING_STAKED,
    STAKE_WHILE_UNSTAKING,
    ApiException,
)

UNSTAKE_PERIOD = timedelta(days=7)


def unstake_completes_at(requested_at: datetime) -> datetime:
    return requested_at + UNSTAKE_PERIOD


def _status_after_refusal(address: str) -> str:
    """The record's status, read to explain a refused transition; no record means no donation."""
    status = UserData.objects.filter(address=address).values_list("status", flat=True).first()
    if status is None:
        raise ApiException(NOT_A_DONOR)
    return status


def stake_add(*, address: str, amount: int) -> None:
    """Stake `amount` more of the address's unstaked confirmed tokens."""
    if amount <= 0:
        raise ValueError("stake amount must be positive")
    moved = UserData.objects.filter(
        address=address,
        status__in=[StakeStatus.NONE, StakeStatus.STAKED],
        tokens__gte=F("staked") + amount,
    ).update(staked=F("staked") + amount, status=StakeStatus.STAKED, modified_at=Now())
    if moved == 1:
        return
    if _status_after_refusal(address) == StakeStatus.UNSTAKING:
        raise ApiException(STAKE_WHILE_UNSTAKING)
    raise ApiException(INSUFFICIENT_TOKENS)


def unstake_request(*, address: str) -> datetime:
    """Start unstaking everything staked; returns when it completes."""
    now = timezone.now()
    moved = UserData.objects.filter(address=address, status=StakeStatus.STAKED, staked__gt=0).update(
        status=StakeStatus.UNSTAKING, unstake_requested_at=now, modified_at=Now()
    )
    if moved == 1:
        return unstake_completes_at(now)
    if _status_after_refusal(address) == StakeStatus.UNSTAKING:
        requested = UserData.objects.values_list("unstake_requested_at", flat=True).get(address=address)
        assert requested is not None  # unstake_request sets the status and the time in one UPDATE
        return unstake_completes_at(requested)  # asking again changes nothing
    raise ApiException(NOTHING_STAKED)


def unstake_complete_due(*, now: datetime | None = None) -> int:
    """Finish every unstaking requested at least UNSTAKE_PERIOD ago; returns how many finished."""
    due_before = (now or timezone.now()) - UNSTAKE_PERIOD
    return UserData.objects.filter(status=StakeStatus.UNSTAKING, unstake_requested_at__lte=due_before).update(
        staked=0, status=StakeStatus.NONE, unstake_requested_at=None, modified_at=Now()
    )
