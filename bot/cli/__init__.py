"""`manzoori`: the commands an admin runs on the host (set-up, the runners, jobs, users, terms,
sheets) and what they print."""
