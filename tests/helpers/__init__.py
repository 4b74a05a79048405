"""Shared test machinery, imported by test modules (which never import each other):

- factories: drafts, jobs, the usual cast's ids and a clock the test moves;
- store: the data key of every test store and the cast registered in it;
- review: a PO put in the manual-review queue, and what is stored about it;
- xlsx: real .xlsx bytes and hand-edited parts;
- botapi: the `botapi` fixture (the Bot API emulator), offered to every test by conftest.py;
- browser: the `phone` fixture (Debian's Chromium through Playwright, at phone size);
- telegram_page: a bot's message drawn as Telegram's phone app draws it, as an HTML page;
- bot: the bot running against the emulator, and the end-to-end steps built on it;
- net: a free port for a server the test starts (the bot's webhook);
- cli: `manzoori` as a subprocess, and in-process setup of the database it uses.
"""
