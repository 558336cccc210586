"""Scripts the campaign ships to the hosts (tool-image build, host facts, timers, probes)."""
