"""A simulated FEIG ID ISC reader (ISO/IEC 15693, multiplexed antennas) on a pty."""
