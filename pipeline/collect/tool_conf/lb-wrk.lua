-- wrk script of the `lb` benchmark (pipeline/benchmarks/lb.py), run with as many threads as
-- connections (one connection per thread).
-- setup(): the URL's name is resolved once (wrk.lookup: every address getaddrinfo returns) and
-- thread i is given address i modulo their number. One address (a balancer, one replica): every
-- connection goes to it. A Swarm dnsrr service name: Docker's DNS answers with every task's
-- address, so connections are spread round-robin over the replicas, which is how a dnsrr
-- service is balanced (by its clients).
-- done(): one machine-readable line after wrk's own report, parsed by the benchmark.
local addrs = nil
local threads = 0
local used = {}

function setup(thread)
  if addrs == nil then
    addrs = wrk.lookup(wrk.host, wrk.port)
  end
  local addr = addrs[(threads % #addrs) + 1]
  thread.addr = addr
  threads = threads + 1
  used[#used + 1] = tostring(addr)
end

function done(summary, latency, requests)
  local e = summary.errors
  local pct = {}
  for _, p in ipairs({50, 90, 99, 99.9}) do
    pct[#pct + 1] = string.format('"%s": %d', tostring(p), latency:percentile(p))
  end
  local quoted = {}
  for i, a in ipairs(used) do quoted[i] = '"' .. a .. '"' end
  io.write(string.format(
    'co-lb-wrk {"format": 1, "threads": %d, "addresses": [%s], "duration_us": %d, ' ..
    '"requests": %d, "bytes": %d, "errors": {"connect": %d, "read": %d, "write": %d, ' ..
    '"status": %d, "timeout": %d}, "latency_us": {"min": %d, "mean": %.1f, "max": %d, ' ..
    '"percentiles": {%s}}}\n',
    threads, table.concat(quoted, ", "), summary.duration, summary.requests, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency.min, latency.mean, latency.max, table.concat(pct, ", ")))
end
