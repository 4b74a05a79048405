"""The catalogue's ways in, through the real bot and the Bot API emulator: /new, the button
under a requester's /start and /status answers, and the chat's menu button, set when a
requester is granted the role or starts the bot; nothing of it for others, and /new without
a public URL says why."""

from __future__ import annotations

from bot.telegram.catalogue import NO_PUBLIC_URL, NOT_A_REQUESTER, OPEN_CATALOGUE
from tests.helpers.bot import ADMIN, all_handled, running_bot
from tests.helpers.factories import APPROVER_A, REQUESTER
from tests.helpers.net import free_port

NEWCOMER = 5005


async def test_a_requester_finds_the_catalogue_under_start_status_new_and_the_menu(
    botapi, db_url, store
):
    port = free_port()
    public = f"http://127.0.0.1:{port}"
    async with running_bot(
        botapi, db_url, web=True, web_port=port, manzoori_public_url=public
    ) as run:
        page = f"{public}/app/new"
        bilal = botapi.user(REQUESTER, "Bilal")
        for command in ("/start", "/status", "/new"):
            bilal.send_text(command)
            answer = await bilal.next_message()
            assert answer.button(OPEN_CATALOGUE).web_app == page, command
        await botapi.wait_for(lambda: botapi.menu_button(REQUESTER)["type"] == "web_app")
        assert botapi.menu_button(REQUESTER) == {
            "type": "web_app", "text": OPEN_CATALOGUE, "web_app": {"url": page},
        }  # fmt: skip
        assert bilal.open_menu_app().startswith(f"{page}#tgWebAppData=")
        ali = botapi.user(APPROVER_A, "Ali")
        ali.send_text("/start")
        assert (await ali.next_message()).buttons == []  # an approver's has none
        ali.send_text("/new")
        assert (await ali.next_message()).text == NOT_A_REQUESTER
        await all_handled(botapi, run)  # whatever those updates did is done
        assert botapi.menu_button(APPROVER_A) == {"type": "default"}
        admin = botapi.user(ADMIN, "Ayesha")
        admin.send_text("/new")  # an admin may order too
        assert (await admin.next_message()).button(OPEN_CATALOGUE).web_app == page
        admin.send_text("/invite requester")
        code = (await admin.next_message()).text.splitlines()[-1].rsplit("=", 1)[1]
        newcomer = botapi.user(NEWCOMER, "Zain")
        newcomer.send_text(f"/start {code}")  # granted the role: the menu opens the catalogue
        welcome = await newcomer.next_message()
        assert welcome.text.startswith("Welcome! You are now registered as requester.")
        assert welcome.button(OPEN_CATALOGUE).web_app == page
        await botapi.wait_for(lambda: botapi.menu_button(NEWCOMER)["type"] == "web_app")
        assert botapi.menu_button(NEWCOMER)["web_app"]["url"] == page


async def test_without_a_public_url_new_says_why_and_start_has_no_button(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        bilal = botapi.user(REQUESTER, "Bilal")
        bilal.send_text("/new")
        assert (await bilal.next_message()).text == NO_PUBLIC_URL
        bilal.send_text("/start")
        assert (await bilal.next_message()).buttons == []
        await all_handled(botapi, run)
        assert botapi.menu_button(REQUESTER) == {"type": "default"}
