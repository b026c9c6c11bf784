"""The asyncio shell around the pure core: journal, outbox, MQTT, commands, devices, systemd."""
