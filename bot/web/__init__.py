"""The web front door: one ASGI application (Starlette, served by uvicorn in the bot's event
loop) with the Telegram webhook, /healthz, /metrics and the Mini App (miniapp.py)."""
