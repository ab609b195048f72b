"""app.availability: an app serves with its newest configuration, or is unavailable with Dify's message."""

from __future__ import annotations

import pytest

from loopwright.app.availability import current_config
from loopwright.app.config import AppConfig
from loopwright.app.errors import APP_UNAVAILABLE, AppUnavailableError
from loopwright.app.lookup import AppLookup
from loopwright.errors import UserInputError
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.store.models import App


async def test_an_app_without_a_configuration_is_unavailable(db: Database) -> None:
    async with db.transaction() as s:
        app = App(name="empty")
        s.add(app)
    with pytest.raises(AppUnavailableError) as raised:
        await current_config(AppLookup(db), app.id)
    assert str(raised.value) == APP_UNAVAILABLE == "App unavailable, please check your app configurations."
    assert isinstance(raised.value, UserInputError)  # the client's to fix: a 400


async def test_an_app_serves_with_its_newest_configuration(db: Database) -> None:
    async with db.transaction() as s:
        app, _ = await repo.create_app(s, "a", AppConfig(opening_statement="v1").model_dump())
        await repo.add_config_version(s, app.id, AppConfig(opening_statement="v2").model_dump())
    config = await current_config(AppLookup(db), app.id)
    assert config.opening_statement == "v2"


async def test_access_follows_the_app_switches_in_dify_order(db: Database) -> None:
    from loopwright.app.availability import check_access
    from loopwright.app.errors import AppForbiddenError

    now = [0.0]
    lookup = AppLookup(db, clock=lambda: now[0])
    with pytest.raises(AppForbiddenError, match=r"^The app no longer exists\.$"):
        await check_access(lookup, "no-such-app")
    async with db.transaction() as s:
        app, _ = await repo.create_app(s, "a", AppConfig().model_dump())
    await check_access(lookup, app.id)  # normal, API on
    async with db.transaction() as s:
        await repo.set_app_access(s, app.id, status="disabled", enable_api=False)
    await check_access(lookup, app.id)  # still cached
    now[0] += 3
    with pytest.raises(AppForbiddenError, match=r"^The app's status is abnormal\.$"):  # checked first
        await check_access(lookup, app.id)
    async with db.transaction() as s:
        await repo.set_app_access(s, app.id, status="normal")
    now[0] += 3
    with pytest.raises(AppForbiddenError, match=r"^The app's API service has been disabled\.$"):
        await check_access(lookup, app.id)
