"""Device drivers: contracts, the driver registry, and one package per device family."""
