"""NXP PN532 modules over UART (HSU): frame codec, commands, link, and the reader driver."""
