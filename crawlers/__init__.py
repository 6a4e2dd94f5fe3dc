"""The crawlers: finding donations on chain, as a pipeline of rooms that import one way.

chain (the node) < decode (pure) < scan (decides, never writes) < record (the only writers of the
crawler tables) < runs (one run of one job) < tasks, admin, management, selectors (Django's side).
`.importlinter` holds the order; docs/development.md, "The code's layers", explains it.
"""
