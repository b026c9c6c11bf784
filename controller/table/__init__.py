"""The pure table core: state, inputs, events and the apply function."""
