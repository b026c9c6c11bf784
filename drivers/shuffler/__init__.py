"""The TSP/1 card shuffler: message set, approval against the Board's list, driver."""
