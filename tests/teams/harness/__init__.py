"""Recording team runs: scenarios, a stub model that answers each agent from its own script."""
