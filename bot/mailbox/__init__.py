"""The buyer's mailbox over IMAP: the relay's Sent copies of our e-mails, and suppliers' replies
(imap: the client; reading: one message into core's values; runner: the passes)."""
