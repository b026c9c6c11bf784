"""The FEIG ID ISC reader (``feig-isc``): ISO/IEC 15693 tags on multiplexed antennas."""
