"""The game's arithmetic: betting rounds, pots, hand values, the shuffle audit (pure functions)."""
