"""What each agent framework says in its own words, one module per framework family: a table
plus small pure functions that the shared normalizers and hint derivation read."""
