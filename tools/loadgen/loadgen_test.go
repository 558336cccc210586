package main

import (
	"bytes"
	"encoding/json"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var body1k = bytes.Repeat([]byte("x"), 1024)

type line struct {
	index      int
	intendedNs int64
	latencyUs  float64
	issueUs    float64
	result     string
}

type report struct {
	header  map[string]any
	lines   []line
	summary summary
}

func parseReport(t *testing.T, out string) report {
	t.Helper()
	rows := strings.Split(strings.TrimSpace(out), "\n")
	var r report
	if err := json.Unmarshal([]byte(rows[0]), &r.header); err != nil {
		t.Fatalf("header: %v: %q", err, rows[0])
	}
	var tail map[string]summary
	if err := json.Unmarshal([]byte(rows[len(rows)-1]), &tail); err != nil {
		t.Fatalf("summary: %v: %q", err, rows[len(rows)-1])
	}
	r.summary = tail["summary"]
	for _, row := range rows[1 : len(rows)-1] {
		f := strings.Fields(row)
		if len(f) != 5 {
			t.Fatalf("bad line %q", row)
		}
		var l line
		l.index, _ = strconv.Atoi(f[0])
		l.intendedNs, _ = strconv.ParseInt(f[1], 10, 64)
		l.latencyUs, _ = strconv.ParseFloat(f[2], 64)
		l.issueUs, _ = strconv.ParseFloat(f[3], 64)
		l.result = f[4]
		r.lines = append(r.lines, l)
	}
	byIndex := make([]line, len(r.lines))
	for _, l := range r.lines {
		byIndex[l.index] = l
	}
	r.lines = byIndex
	return r
}

func runAgainst(t *testing.T, url string, cfg config) report {
	t.Helper()
	cfg.URL = url
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(cfg, &out); err != nil {
		t.Fatal(err)
	}
	return parseReport(t, out.String())
}

func baseConfig() config {
	return config{Rate: 1000, Duration: 500 * time.Millisecond, Conns: 1, MaxConns: 1,
		Timeout: 2 * time.Second, Late: time.Millisecond, BodyBytes: 1024}
}

// One connection and a server that stalls one request for 200 ms: the requests due during
// the stall cannot be written until it ends, and their latency counts from their due time.
// A closed-loop tool would not have sent them at all (coordinated omission).
func TestStallCountsFromIntendedTime(t *testing.T) {
	const stall = 200 * time.Millisecond
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 101 { // the probe is request 1: this is measured request 99
			time.Sleep(stall)
		}
		_, _ = w.Write(body1k)
	}))
	defer srv.Close()

	rep := runAgainst(t, srv.URL+"/", baseConfig())

	if len(rep.lines) != 500 || rep.summary.Requests != 500 || rep.summary.OK != 500 {
		t.Fatalf("want 500 requests, all ok: %+v", rep.summary)
	}
	stalled := rep.lines[99]
	if stalled.latencyUs < 200_000 {
		t.Fatalf("stalled request latency %.1f us, want >= 200 ms", stalled.latencyUs)
	}
	stallEndNs := stalled.intendedNs + int64(stall)
	late := 0
	for _, l := range rep.lines[100:] {
		if l.intendedNs >= stallEndNs {
			break
		}
		late++
		// written only once the stalled response was complete
		if waited := float64(stallEndNs-l.intendedNs) / 1e3; l.latencyUs < waited {
			t.Errorf("request %d due %d ns: latency %.1f us < %.1f us spent waiting",
				l.index, l.intendedNs, l.latencyUs, waited)
		}
		if l.issueUs < float64(stallEndNs-l.intendedNs)/1e3 {
			t.Errorf("request %d issued %.1f us after its due time, during the stall", l.index, l.issueUs)
		}
	}
	if late < 195 || rep.summary.Late < late-1 {
		t.Fatalf("%d requests due during the stall, summary late %d", late, rep.summary.Late)
	}
	if next := rep.lines[100]; next.latencyUs < 198_000 {
		t.Fatalf("request due 1 ms after the stalled one: latency %.1f us, want ~199 ms", next.latencyUs)
	}
	// the server caught up before the end: the rate was achieved (exactly as the lines say)
	if r, want := rep.summary.AchievedRate, okRate(rep.lines); r < 900 || r > 1100 || math.Abs(r-want) > 0.005*want {
		t.Fatalf("achieved rate %g, want ~1000 and %g from the lines", r, want)
	}
}

// Non-2xx answers and wrong body lengths are counted and printed, not dropped.
func TestErrorsCounted(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) % 10 { // the probe is request 1, answered in full
		case 3:
			w.WriteHeader(http.StatusServiceUnavailable)
		case 7:
			_, _ = w.Write(body1k[:10])
		default:
			_, _ = w.Write(body1k)
		}
	}))
	defer srv.Close()
	cfg := baseConfig()
	cfg.Duration, cfg.MaxConns, cfg.Conns = 200*time.Millisecond, 4, 2

	rep := runAgainst(t, srv.URL+"/", cfg)

	s := rep.summary
	if s.Requests != 200 || s.OK != 160 || s.HTTPErrors != 20 || s.BadBody != 20 ||
		s.Timeouts != 0 || s.Errors != 0 {
		t.Fatalf("counts: %+v", s)
	}
	// 160 ok of 200 in 0.2 s: ~800/s. The exact figure is the ok responses over the span
	// between the first and the last of them, recomputed from the per-request lines (a loaded
	// machine stretches that span by a few ms, so a fixed band alone would be flaky).
	if r, want := s.AchievedRate, okRate(rep.lines); r < 600 || r > 850 || math.Abs(r-want) > 0.005*want {
		t.Fatalf("achieved rate %g, want ~800 and %g from the lines", r, want)
	}
	results := map[string]int{}
	for _, l := range rep.lines {
		results[l.result]++
	}
	if results["200"] != 160 || results["503"] != 20 || results["badlen"] != 20 {
		t.Fatalf("per-request results: %v", results)
	}
}

// A request without an answer within -timeout of its due time is a timeout; the generator
// replaces its connection and goes on, and the run stays bounded.
func TestTimeoutCountedAndBounded(t *testing.T) {
	var n atomic.Int32
	release := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 51 {
			<-release
			return
		}
		_, _ = w.Write(body1k)
	}))
	defer srv.Close()
	defer once.Do(func() { close(release) })
	cfg := baseConfig()
	cfg.Duration, cfg.Timeout = 300*time.Millisecond, 100*time.Millisecond

	began := time.Now()
	rep := runAgainst(t, srv.URL+"/", cfg)
	once.Do(func() { close(release) })

	if took := time.Since(began); took > time.Second {
		t.Fatalf("took %v for a 300 ms window with a 100 ms timeout", took)
	}
	s := rep.summary
	// the request due 1 ms after the hung one gets a new connection only when the hung one
	// times out, 1 ms before its own deadline: it may time out too
	if s.Requests != 300 || s.Timeouts < 1 || s.Timeouts > 3 || s.OK != 300-s.Timeouts {
		t.Fatalf("counts: %+v", s)
	}
	hung := rep.lines[49]
	if hung.result != "timeout" || hung.latencyUs < 100_000 || hung.latencyUs > 150_000 {
		t.Fatalf("hung request: %+v", hung)
	}
	for _, l := range rep.lines {
		if l.result == "timeout" && (l.index < 49 || l.index > 51) {
			t.Fatalf("request %d timed out too: %+v", l.index, l)
		}
	}
}

func TestRefusedAtStart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := baseConfig()
	cfg.URL = "http://" + addr + "/"
	err = run(cfg, &bytes.Buffer{})
	if _, ok := err.(*connectError); !ok || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("want a connect error, got %v", err)
	}
}

func TestFlags(t *testing.T) {
	cfg, err := parseFlags([]string{"-url", "http://10.0.0.1:8080/", "-rate", "500",
		"-duration", "2s", "-warmup", "1s", "-connections", "4"})
	if err != nil || cfg.Rate != 500 || cfg.Duration != 2*time.Second || cfg.Conns != 4 ||
		cfg.MaxConns != 256 || cfg.BodyBytes != 1024 {
		t.Fatalf("%+v %v", cfg, err)
	}
	if _, err := parseFlags([]string{"-url", "http://x/", "-connections", "0"}); err == nil {
		t.Fatal("0 connections accepted")
	}
	tg, err := newTarget("http://10.0.0.1/a?b=1")
	if err != nil || tg.addr != "10.0.0.1:80" ||
		string(tg.request) != "GET /a?b=1 HTTP/1.1\r\nHost: 10.0.0.1\r\nUser-Agent: co-loadgen\r\n\r\n" {
		t.Fatalf("%+v %v", tg, err)
	}
}

// okRate: (ok responses - 1) / seconds between the first and the last ok completion, from the
// lines (completion = intended time + latency).
func okRate(lines []line) float64 {
	first, last, ok := math.Inf(1), math.Inf(-1), 0
	for _, l := range lines {
		if l.result != "200" {
			continue
		}
		done := float64(l.intendedNs)/1e9 + l.latencyUs/1e6
		first, last, ok = math.Min(first, done), math.Max(last, done), ok+1
	}
	return float64(ok-1) / (last - first)
}
