"""People: who the bot has met and who is an admin (users), invitations, roles and groups
(people), and an approver's delegation at work, their cards following it (delegating).

Imports core.approval, core.records, core.jobs, core.drafting and core's top modules."""
