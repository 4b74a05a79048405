"""Documents the shell prints from core's values: the purchase order's PDF (pdf), rendered in
worker processes of its own (rendering). Imports core.

fpdf2 and fontTools, which bot.documents.pdf renders with, take about a second to import and
60 ms of pure Python a render, which no process that answers people should spend. So only the
renderer's workers import them (bot.documents.rendering), and a long-running process
(bot.bootstrap.running) starts those workers and makes their fonts ready (rendering.prepare)
as it starts, so that its first send waits for neither."""
