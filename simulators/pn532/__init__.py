"""A simulated NXP PN532 NFC module on a pty, faithful enough for libnfc's own tools."""
