"""runs: one run of one job (the crawl loop, old-unconfirmed, reconcile and its freeze, operator actions,
catch-up progress). Turns a crawler's label into what the stages below need; imports every room below."""
