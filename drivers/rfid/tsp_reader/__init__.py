"""The TSP/1 reference RFID reader: its message set, the driver (serial or USB) and its zones."""
