"""The supplier e-mail at work: claim, attempt, record and recover an outbox row (dispatch),
and the manual-review queue where an admin settles a send that failed for good or whose
outcome is unknown (review).

Imports core.people and everything below it; nothing of core.messaging."""
