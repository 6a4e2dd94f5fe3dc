"""decode: pure functions from the node's JSON answers to frozen values (blocks, transfers, receipts, call
frames, balances, blooms). No I/O, no Django, no settings; imports only chain's pure builders and outcomes."""
