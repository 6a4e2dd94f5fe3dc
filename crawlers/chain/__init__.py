"""chain: talking to one chain's provider (transport, batching, back-off, read-ahead, request builders,
the block cache and debug store, client factories, the tip read). No ORM, no decisions; imports no other room."""
