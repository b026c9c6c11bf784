"""The dealer's station (``tablectl station run``, docs/station.md): a local web app for the
table's touchscreen that logs dealers in and sends their commands to the daemon over its console
socket, signed on their behalf, and follows the table through the same socket."""
