"""What is kept and for how long: the audit trail as an export (audit) and the retention
table with its purge (retention).

Imports core.jobs, core.drafting and core's top modules; nothing of core.approval."""
