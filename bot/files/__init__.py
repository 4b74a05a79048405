"""Reading an uploaded sheet: what a file may be and the sentences that refuse it (limits), CSV
text (csv_text) and Excel workbooks (workbooks) read into core's Table, the front that tells
them apart by their content (sheets), and the worker process every upload is read in (parsing).

Imports core and bot.words."""
