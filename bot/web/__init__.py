"""The web front door: one ASGI application (Starlette, served by uvicorn in the bot's event
loop) with the Telegram webhook, /healthz and /metrics."""
