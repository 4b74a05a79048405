"""Manzoori's domain and use cases: no Telegram, SQL, HTTP or clock (the shell hands in `now`
and a store, core.ports). A concept per folder, each above the ones it uses:

- purchasing: the use cases a request goes through: a sheet submitted, new terms imported,
  an approver's edit, the review view of a PO.
- messaging and outbox (side by side): what people are told and when (cards, alerts,
  reminders, digests); the supplier e-mail's outbox at work and the manual-review queue.
- people: who the bot has met, invitations, roles, groups, delegation at work.
- approval, records and company (side by side): the policy (its file, routes, tally,
  budgets, delegations, the reminder ladder), decisions and their replays, opening a request
  for approval, signed tokens; the audit export and retention; the buyer and its branches.
- jobs: the job, its state machine and the one transition, its outbox rows (effects, sends,
  retries) and notices, ending or settling a job.
- drafting: from a sheet's rows to priced drafts: tables, sheets, terms, intake, drafts,
  flags, money.

At the top, what every part uses: errors, problems (what is wrong with a file, as data),
texts (outside text made safe), toml_files and nesting (reading a person's TOML file),
versions (an admin's files kept version by version), and ports (the protocols the shell
implements; it names the domain's types for the type checker only). The layers are checked
by import-linter ([tool.importlinter] in pyproject.toml).
"""
