"""Everything the shell says to a person, in their language: the one way a text is translated
(i18n, with the catalogues in locale/), the sentences both front ends share about sheets, terms
and purchase orders (texts), and core's data in words: file problems (problems), a draft's
flags (flags), the policy (policy_texts), people's refusals (refusals), what the CLI and
/history report (reports); and what a person types after a command, read one way (arguments).

Imports core, and nothing else of bot."""
