"""The live table view: what surveillance sees, folded from the event stream."""
