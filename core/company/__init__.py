"""The buyer and its branches: who buys (legal name, address, NTN, STRN) and where stock is
delivered, kept in one TOML file an admin checks and imports like the approval policy: the
model (company), the file (company_file) and its use cases (imports).

Imports core.jobs, core.drafting and core's top modules; nothing of core.approval or
core.records beside it."""
