"""The supplier e-mail's outbox: the runner that performs approved sends, the SMTP sender that
classifies every failure, and the PO e-mail itself."""
