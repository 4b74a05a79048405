"""The imperative shell: one subpackage per role (telegram, outbox, cli, dev), with the
configuration, the composition root (bootstrap) and the clock at the top."""
