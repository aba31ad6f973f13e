"""One module per topic; each imports `memoir.flows.cli.app.cli` and decorates its commands.

Importing them is cheap by design (the hook's `memoir hook claude-code` has a ~300 ms budget):
anything slow to import is imported inside the command that needs it (`# deferred: start-up`).
"""
