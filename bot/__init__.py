"""The imperative shell: one subpackage per role, with the configuration (config), the
composition root (bootstrap) and the clock at the top.

- telegram: the bot's application, handlers, cards and the notice runner.
- web: the Mini App's page and API, and the webhook.
- outbox: the supplier e-mail (SMTP) and the runner that works the outbox.
- cli: the `manzoori` command.
- words: everything said to a person, in their language (the i18n catalogues included).
- files: reading an uploaded sheet, in a worker process of its own.
- documents: the PO's PDF, rendered in worker processes of its own.
- workers: the fork server those worker processes start from.
- dev: the Bot API emulator, the SMTP sink and the demo; imported only by the CLI's demo
  command and tests (checked by import-linter).
"""
