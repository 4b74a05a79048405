"""`python -m bot.cli`: the `manzoori` command without its console script."""

from bot.cli.app import main

main()
