"""tablectl: the controller daemon for a Texas Hold'em table."""

__version__ = "0.2.0"
