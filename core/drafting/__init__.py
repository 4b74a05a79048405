"""From a sheet's rows to priced purchase-order drafts, as pure values: spreadsheet tables and
restock sheets as read (tables, sheets), the supplier terms (terms), intake's checks that turn
a sheet into one draft per supplier (intake), the draft and its canonical hash (drafts), the
flags an approver must see (flags), and money in paisa (money).

Imports only core's top modules (errors, problems, texts)."""
