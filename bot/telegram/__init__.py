"""The Telegram front end: the application and its handlers, the cards, and the notice runner
that delivers what the workflow owes people in Telegram."""

import os

# Opt in now to PTB 23's durations as timedelta (RetryAfter.retry_after and others): our code
# reads both forms, and PTB 22 warns on every 429 otherwise. PTB reads it at each use, so it is
# set before any module of this package touches PTB.
os.environ.setdefault("PTB_TIMEDELTA", "true")
