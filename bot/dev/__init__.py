"""Stand-ins for what is not on this machine: a strict local Telegram Bot API (botapi), a real
SMTP server that keeps what it receives (smtp), and the demo that runs the bot against both."""
