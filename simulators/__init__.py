"""Device simulators that speak the real wire bytes, and the scenario runner."""
