"""Collection: what runs on any inventory of hosts (never the embedded lab itself)."""
