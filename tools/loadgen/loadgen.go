package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"
)

const formatVersion = 1

// Go's own timers wake about 0.4 ms late on Linux (go1.19 measured on the lab: p50 390 us),
// which would add that much to every latency. The scheduler instead sleeps in nanosleep with
// a 1 ns timer slack until spinWindow before the due time, then spins: ~10% of a core at
// 1000 req/s, and due times are met to a few microseconds.
const spinWindow = 100 * time.Microsecond

type config struct {
	URL       string
	Rate      float64
	Duration  time.Duration
	Warmup    time.Duration
	Conns     int
	MaxConns  int
	Timeout   time.Duration
	Late      time.Duration
	BodyBytes int
}

func (c config) validate() error {
	switch {
	case c.URL == "":
		return errors.New("-url is required")
	case !(c.Rate > 0) || math.IsInf(c.Rate, 0):
		return fmt.Errorf("-rate must be positive, got %g", c.Rate)
	case c.Duration <= 0 || c.Warmup < 0:
		return errors.New("-duration must be positive and -warmup not negative")
	case c.Conns < 1 || c.MaxConns < c.Conns:
		return fmt.Errorf("need 1 <= -connections (%d) <= -max-connections (%d)", c.Conns, c.MaxConns)
	case c.Timeout <= 0:
		return errors.New("-timeout must be positive")
	}
	return nil
}

// connectError: the target refused (or never answered) the first request; the server is
// probably still starting.
type connectError struct{ err error }

func (e *connectError) Error() string { return e.err.Error() }

type target struct {
	addr    string // host:port
	request []byte // the whole GET request, written as is on every request
}

func newTarget(raw string) (target, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return target{}, err
	}
	if u.Scheme != "http" || u.Host == "" {
		return target{}, fmt.Errorf("-url must be http://HOST[:PORT]/..., got %q", raw)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	path := u.RequestURI()
	req := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: co-loadgen\r\n\r\n", path, u.Host)
	return target{addr: addr, request: []byte(req)}, nil
}

type conn struct {
	net.Conn
	br      *bufio.Reader
	pending chan sent // the request just written on it, for its reader goroutine
}

func dial(addr string, timeout time.Duration) (*conn, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	return &conn{Conn: c, br: bufio.NewReaderSize(c, 16<<10), pending: make(chan sent, 1)}, nil
}

// outcome of one request: the status code, or badlen / timeout / error.
type outcome struct {
	status string
	ok     bool
	keep   bool // the connection can carry the next request
}

// readResponse reads one whole response (the deadline is already set).
func readResponse(c *conn, bodyBytes int) outcome {
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return failure(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return failure(err)
	}
	o := outcome{status: strconv.Itoa(resp.StatusCode), keep: !resp.Close}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return o
	}
	if bodyBytes >= 0 && n != int64(bodyBytes) {
		o.status = "badlen"
		return o
	}
	o.ok = true
	return o
}

func failure(err error) outcome {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return outcome{status: "timeout"}
	}
	return outcome{status: "error"}
}

type job struct {
	index    int // from the first request of the warm-up
	intended time.Time
	deadline time.Time // intended + timeout: answered by then, or a timeout
}

type sent struct {
	job
	issued time.Time // just before the write (or when the request was given up)
}

type result struct {
	sent
	done time.Time
	outcome
}

// generator: the scheduler never waits for a connection. At each due time it writes the
// request itself on an idle connection or, with none idle, queues it and dials one more
// connection (up to the cap); whichever connection frees up (or opens) first writes the
// oldest queued request. One reader goroutine per connection reads the responses.
// (Handing every request to a goroutine to write cost a thread wake-up: 26 us median, 300 us
// p99 on the lab. Dialling in the scheduler stalled it for a round trip: 40 ms on the WAN.)
type generator struct {
	cfg     config
	target  target
	results chan result
	jobs    sync.WaitGroup // until every job has its result
	dials   sync.WaitGroup

	mu      sync.Mutex
	idle    []*conn // most recently used last: a few hot connections carry a light load
	backlog []job   // due, waiting for a connection, oldest first
	pool    int     // open or opening connections
	peak    int
	closing bool
}

// schedule issues job i at start + i/rate, then waits for every result and closes all.
func (g *generator) schedule(start time.Time, total int) {
	runtime.LockOSThread() // the timer slack below is per thread
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_TIMERSLACK, 1, 0)
	g.jobs.Add(total)
	for i := 0; i < total; i++ {
		due := start.Add(time.Duration(float64(i) * 1e9 / g.cfg.Rate))
		sleepUntil(due)
		g.issue(job{index: i, intended: due, deadline: due.Add(g.cfg.Timeout)})
	}
	runtime.UnlockOSThread()
	g.jobs.Wait()
	g.mu.Lock()
	g.closing = true
	for _, c := range g.idle {
		close(c.pending)
		c.Close()
	}
	g.idle = nil
	g.mu.Unlock()
	g.dials.Wait()
	close(g.results)
}

func (g *generator) issue(j job) {
	g.mu.Lock()
	if n := len(g.idle); n > 0 {
		c := g.idle[n-1]
		g.idle = g.idle[:n-1]
		g.mu.Unlock()
		g.send(c, j)
		return
	}
	g.backlog = append(g.backlog, j)
	g.growLocked()
	g.mu.Unlock()
}

// growLocked dials one more connection in the background if the cap allows.
func (g *generator) growLocked() {
	if g.pool >= g.cfg.MaxConns || g.closing {
		return
	}
	g.pool++
	if g.pool > g.peak {
		g.peak = g.pool
	}
	g.dials.Add(1)
	go func() {
		defer g.dials.Done()
		c, err := dial(g.target.addr, g.cfg.Timeout)
		if err != nil {
			g.mu.Lock()
			g.pool--
			// the oldest waiting request gets the failure, so a dead server drains the queue
			if len(g.backlog) > 0 {
				j := g.backlog[0]
				g.backlog = g.backlog[1:]
				now := time.Now()
				if len(g.backlog) > 0 {
					g.growLocked()
				}
				g.mu.Unlock()
				g.finish(result{sent{j, now}, now, failure(err)})
				return
			}
			g.mu.Unlock()
			return
		}
		go g.read(c)
		g.release(c)
	}()
}

// release gives a free connection the oldest queued request that can still be answered in
// time (those that cannot are timeouts, never sent), or puts it back in the idle pool.
func (g *generator) release(c *conn) {
	g.mu.Lock()
	if g.closing {
		g.mu.Unlock()
		close(c.pending)
		c.Close()
		return
	}
	for len(g.backlog) > 0 {
		j := g.backlog[0]
		g.backlog = g.backlog[1:]
		if now := time.Now(); !now.Before(j.deadline) {
			g.mu.Unlock()
			g.finish(result{sent{j, now}, now, outcome{status: "timeout"}})
			g.mu.Lock()
			continue
		}
		g.mu.Unlock()
		g.send(c, j)
		return
	}
	g.idle = append(g.idle, c)
	g.mu.Unlock()
}

// send writes job j on c, whose reader goroutine then reads the answer.
func (g *generator) send(c *conn, j job) {
	s := sent{job: j, issued: time.Now()}
	err := c.SetDeadline(j.deadline)
	if err == nil {
		if _, err = c.Write(g.target.request); err == nil {
			c.pending <- s
			return
		}
	}
	close(c.pending)
	g.drop(c)
	g.finish(result{s, time.Now(), failure(err)})
}

func (g *generator) read(c *conn) {
	for s := range c.pending {
		o := readResponse(c, g.cfg.BodyBytes)
		done := time.Now()
		if done.After(s.deadline) { // Go's deadline timer fires late: hold to -timeout exactly
			o = outcome{status: "timeout", keep: o.keep}
		}
		g.finish(result{s, done, o})
		if !o.keep {
			g.drop(c)
			return
		}
		g.release(c)
	}
}

// drop closes a broken connection; if requests are waiting, another one is dialled.
func (g *generator) drop(c *conn) {
	c.Close()
	g.mu.Lock()
	g.pool--
	if len(g.backlog) > 0 {
		g.growLocked()
	}
	g.mu.Unlock()
}

func (g *generator) finish(r result) {
	g.results <- r
	g.jobs.Done()
}

func sleepUntil(t time.Time) {
	if d := time.Until(t) - spinWindow; d > 0 {
		ts := syscall.NsecToTimespec(int64(d))
		_ = syscall.Nanosleep(&ts, nil)
	}
	for time.Now().Before(t) {
	}
}

type summary struct {
	Requests       int     `json:"requests"`
	OK             int     `json:"ok"`
	HTTPErrors     int     `json:"http_errors"` // a response, not 2xx
	BadBody        int     `json:"bad_body"`
	Timeouts       int     `json:"timeouts"`
	Errors         int     `json:"errors"`
	Late           int     `json:"late"`
	WarmupRequests int     `json:"warmup_requests"`
	AchievedRate   float64 `json:"achieved_rate"`
	ConnectionsMax int     `json:"connections_max"`
	ElapsedS       float64 `json:"elapsed_s"`
}

func (s *summary) count(r result, late bool) {
	s.Requests++
	if late {
		s.Late++
	}
	switch {
	case r.ok:
		s.OK++
	case r.status == "badlen":
		s.BadBody++
	case r.status == "timeout":
		s.Timeouts++
	case r.status == "error":
		s.Errors++
	default:
		s.HTTPErrors++
	}
}

func micros(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/1e3, 'f', 1, 64)
}

// run probes the target, then drives the load and streams the report to out.
func run(cfg config, out io.Writer) error {
	t, err := newTarget(cfg.URL)
	if err != nil {
		return err
	}
	g := &generator{cfg: cfg, target: t, results: make(chan result, 4096)}
	if err := g.open(); err != nil {
		return err
	}
	w := bufio.NewWriterSize(out, 64<<10)
	header, _ := json.Marshal(map[string]any{
		"tool": "co-loadgen", "format": formatVersion, "go": runtime.Version(), "url": cfg.URL,
		"rate": cfg.Rate, "duration_s": cfg.Duration.Seconds(), "warmup_s": cfg.Warmup.Seconds(),
		"connections": cfg.Conns, "max_connections": cfg.MaxConns,
		"timeout_s": cfg.Timeout.Seconds(), "late_us": cfg.Late.Microseconds(),
		"body_bytes": cfg.BodyBytes, "sha256": selfHash(),
		"columns": []string{"index", "intended_ns", "latency_us", "issue_delay_us", "result"},
	})
	fmt.Fprintf(w, "%s\n", header)

	warm := int(math.Round(cfg.Warmup.Seconds() * cfg.Rate))
	total := warm + int(math.Round(cfg.Duration.Seconds()*cfg.Rate))
	start := time.Now().Add(time.Millisecond)
	windowStart := start.Add(time.Duration(float64(warm) * 1e9 / cfg.Rate))
	go g.schedule(start, total)

	var s summary
	var firstOK, lastOK time.Time
	for r := range g.results {
		if r.index < warm {
			s.WarmupRequests++
			continue
		}
		delay := r.issued.Sub(r.intended)
		s.count(r, delay > cfg.Late)
		if r.ok && (firstOK.IsZero() || r.done.Before(firstOK)) {
			firstOK = r.done
		}
		if r.ok && r.done.After(lastOK) {
			lastOK = r.done
		}
		fmt.Fprintf(w, "%d %d %s %s %s\n", r.index-warm, r.intended.Sub(windowStart).Nanoseconds(),
			micros(r.done.Sub(r.intended)), micros(delay), r.status)
	}
	s.ConnectionsMax = g.peak // the scheduler is done: no more writers
	s.ElapsedS = time.Since(windowStart).Seconds()
	// ok responses per second between the first and the last: the rate itself when every
	// request is answered (whatever the path's latency), less when some fail or the server
	// falls behind and has not caught up by the end of the window
	if span := lastOK.Sub(firstOK).Seconds(); s.OK > 1 && span > 0 {
		s.AchievedRate = math.Round(float64(s.OK-1)/span*1000) / 1000
	}
	tail, _ := json.Marshal(map[string]summary{"summary": s})
	fmt.Fprintf(w, "%s\n", tail)
	return w.Flush()
}

// selfHash: the sha256 of this binary, so every report names the generator that wrote it.
func selfHash() string {
	path, err := os.Executable()
	if err != nil {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}

// open dials the initial pool (in parallel: on a long path one by one would take a round
// trip each) and checks that one whole request works: a port published by docker-proxy
// accepts connections before the server behind it listens.
func (g *generator) open() error {
	conns := make([]*conn, g.cfg.Conns)
	errs := make([]error, g.cfg.Conns)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			conns[i], errs[i] = dial(g.target.addr, g.cfg.Timeout)
		}(i)
	}
	wg.Wait()
	fail := func(err error) error {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
		return &connectError{fmt.Errorf("cannot reach %s: %w", g.target.addr, err)}
	}
	for _, err := range errs {
		if err != nil {
			return fail(err)
		}
	}
	probe := conns[0]
	err := probe.SetDeadline(time.Now().Add(g.cfg.Timeout))
	if err == nil {
		_, err = probe.Write(g.target.request)
	}
	if err != nil {
		return fail(err)
	}
	if o := readResponse(probe, -1); o.status == "timeout" || o.status == "error" {
		return fail(fmt.Errorf("first request: %s", o.status))
	} else if !o.keep {
		probe.Close()
		conns = conns[1:]
	}
	for _, c := range conns {
		go g.read(c)
	}
	g.idle, g.pool, g.peak = conns, len(conns), len(conns)
	return nil
}
