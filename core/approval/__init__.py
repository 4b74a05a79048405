"""The approval policy and decisions: who may approve, how many and for how long (policies),
the policy file (policy_file) and putting it in force (approval_policy), the reminder ladder
(ladder), the route a draft takes (routes) and its tally (tally), stages nobody left can
complete (shortfalls), budgets, delegations, where a request stands and who is asked
(standing), a request opened or drafted anew for approval (opening), a decision checked and
recorded (decisions) and replayed by an offline client (replays), signed tokens (signing).

Imports core.jobs, core.drafting and core's top modules."""
