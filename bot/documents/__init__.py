"""Documents the shell prints from core's values: the purchase order's PDF (pdf). Imports core.

fpdf2 and fontTools, which bot.documents.pdf renders with, take about a second to import,
which no CLI command but those that send or show a PO needs. So the two places that render
(bot.outbox.runner.make_documents, bot.documents.copies.approver_copy) import it when first
called, and a long-running process (bot.bootstrap.running) imports it and makes its fonts
ready (pdf.prepare) as it starts, so that its first send waits for neither."""
