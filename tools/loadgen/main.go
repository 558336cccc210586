// Command co-loadgen is an open-loop, constant-rate HTTP/1.1 load generator.
//
// Request i is due at t_i = start + i/rate whatever happened to the requests before it, and
// its latency is measured from t_i, not from when it was written: a server stall shows up as
// latency of every request that fell due during it, instead of as requests never sent
// (coordinated omission, which closed-loop tools such as wrk suffer from).
//
// Usage:
//
//	co-loadgen -url http://10.77.0.11:8080/ -rate 1000 -duration 5s -warmup 1s \
//	    -connections 16 -timeout 2s
//
// Output on stdout, streamed as responses complete (constant memory):
//
//	{"tool":"co-loadgen", ... "columns":[...]}        header: the settings
//	index intended_ns latency_us issue_delay_us result  one line per measured request
//	{"summary":{"requests":..., "ok":..., ...}}        last line: the counts
//
// index and intended_ns count from the start of the measured window (requests due during
// -warmup are sent but not printed); result is the HTTP status, or "badlen" (2xx with a body
// of the wrong length), "timeout" (no complete response within -timeout of the due time) or
// "error" (connection refused, reset, malformed response). issue_delay_us is how long after
// its due time the request was written; more than -late (1 ms) counts it as late in the
// summary (no connection was free, or the client itself fell behind).
//
// When the target cannot be reached at start (the campaign retries while the server is still
// starting) it prints one line {"error":"cannot reach ...","connect_error":true} on stdout, the
// same message on stderr, and exits 3. Bad flags exit 2.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

const (
	exitUsage   = 2
	exitConnect = 3
)

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "co-loadgen: %v\n", err)
		os.Exit(exitUsage)
	}
	if err := run(cfg, os.Stdout); err != nil {
		if ce, ok := err.(*connectError); ok {
			line, _ := json.Marshal(map[string]any{"error": ce.Error(), "connect_error": true})
			fmt.Fprintf(os.Stdout, "%s\n", line)
			fmt.Fprintf(os.Stderr, "co-loadgen: %v\n", ce)
			os.Exit(exitConnect)
		}
		fmt.Fprintf(os.Stderr, "co-loadgen: %v\n", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("co-loadgen", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&cfg.URL, "url", "", "target, http://HOST:PORT/PATH (an IP address: no DNS)")
	fs.Float64Var(&cfg.Rate, "rate", 1000, "requests per second, constant")
	fs.DurationVar(&cfg.Duration, "duration", 5*time.Second, "measured window")
	fs.DurationVar(&cfg.Warmup, "warmup", 0, "load before the measured window, not reported")
	fs.IntVar(&cfg.Conns, "connections", 16, "keep-alive connections opened at start")
	fs.IntVar(&cfg.MaxConns, "max-connections", 256, "cap on the pool when all are busy")
	fs.DurationVar(&cfg.Timeout, "timeout", 2*time.Second, "per request, from its due time")
	fs.DurationVar(&cfg.Late, "late", time.Millisecond, "written later than this: late")
	fs.IntVar(&cfg.BodyBytes, "body-bytes", 1024, "expected body length (-1: any)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return cfg, cfg.validate()
}
