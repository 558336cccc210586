"""Tool configurations the benchmarks ship to the hosts (nginx, HAProxy, wrk)."""
