"""Requests signed at another moment than now, for the tests of the signing window (a request whose signing date is
more than 5 minutes from the server's clock is refused)."""

from __future__ import annotations

import datetime
from unittest import mock

import botocore.auth


def signed_minutes_ago(minutes: float):
    """botocore signs as if its clock were `minutes` behind (negative: ahead)."""
    moment = datetime.datetime.now(datetime.UTC).replace(tzinfo=None) - datetime.timedelta(minutes=minutes)
    return mock.patch.object(botocore.auth, "get_current_datetime", lambda: moment)
