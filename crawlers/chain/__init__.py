"""chain: talking to one chain's provider (transport, batching, back-off, the in-flight bound, request builders,
the block cache and debug store, client factories, the tip read). No ORM, no decisions; imports no other room."""
