"""RFID card readers: UID spelling, presence tracking, and one package per reader family."""
