"""The whole table on one machine: simulators, daemon, broker and the physical world they share."""
