"""The job and its state machine: its records (jobs), the state table (states), the one
validated transition with compare-and-set and the retry of a use case that lost a race
(transitions); the outbox rows a job owes, named by business action (effects, sends, retries
for which failures may be retried); the Telegram messages it owes (notices); and ending or
settling a job without a decision (closing).

Imports core.drafting and core's top modules."""
