"""The rule catalogue as implemented: one function per rule, each citing its ID."""
