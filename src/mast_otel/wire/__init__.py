"""The wire vocabulary both sides share: span attribute names and values (``attributes``),
argument and result hashing (``hashing``), and the success/failure claims read from final
answers (``claims``). The agent-side instrumentation writes it and the processor reads it;
neither side imports the other for it."""
