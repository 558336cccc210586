"""Analysis: reads collected data only (never the hosts, the modes or the lab)."""
