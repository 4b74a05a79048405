"""What people are told, and when: what a due notice says now and what becomes of it once
sent (delivery), an approver's card and its edits (cards), the reminder ladder's sweep and
nudges (nudges), and what waits for whom (pending). The shell renders and sends.

Imports core.people and everything below it; nothing of core.outbox."""
