package httpapi

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkEventLatency measures when a write's event reaches a stream that is open on the
// store, against when the write is answered: p50 and p99 over b.N writes through the API of
// the time from the request to the answer (write-) and to the event (event-), and of how
// long after the answer the event came (after-answer-; 0 when it came first).
func BenchmarkEventLatency(b *testing.B) {
	g := startGitServerWith(b, GitOptions{})
	store := g.createStore(b, "", "latency")
	resp, err := http.Get(g.url + "/v1/memory_stores/" + store + "/events")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	events := make(chan time.Time, 1024)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "event: memory.") {
				events <- time.Now()
			}
		}
	}()
	var write, event, after []time.Duration
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		g.api(b, "POST", "/v1/memory_stores/"+store+"/memories", "", fmt.Sprintf(`{"path":"/m%d.md","content":"x"}`, i), nil)
		answered := time.Now()
		select {
		case at := <-events:
			write, event = append(write, answered.Sub(start)), append(event, at.Sub(start))
			after = append(after, max(at.Sub(answered), 0))
		case <-time.After(10 * time.Second):
			b.Fatal("no event within 10 s")
		}
	}
	b.StopTimer()
	for _, m := range []struct {
		name string
		d    []time.Duration
	}{{"write", write}, {"event", event}, {"after-answer", after}} {
		slices.Sort(m.d)
		b.ReportMetric(float64(m.d[len(m.d)/2].Microseconds()), m.name+"-p50-µs")
		b.ReportMetric(float64(m.d[len(m.d)*99/100].Microseconds()), m.name+"-p99-µs")
	}
}

// BenchmarkIdleStreams opens 1,000 event streams on one store and reports what they cost
// while nothing happens: heap and goroutines per stream, and the CPU the process uses per
// second idle; then the time one write takes to reach all of them. The clients are bare
// connections that read nothing until the end, so that the figures are the server's. Run
// it with -benchtime 1x: a second round starts while the first round's streams wind down.
func BenchmarkIdleStreams(b *testing.B) {
	const streams = 1000
	g := startGitServerWith(b, GitOptions{})
	store := g.createStore(b, "", "idle")
	addr := strings.TrimPrefix(g.url, "http://")
	for range b.N {
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		goroutines := runtime.NumGoroutine()
		conns := make([]net.Conn, streams)
		readers := make([]*bufio.Reader, streams)
		for i := range conns {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			fmt.Fprintf(c, "GET /v1/memory_stores/%s/events HTTP/1.1\r\nHost: %s\r\n\r\n", store, addr)
			conns[i], readers[i] = c, bufio.NewReaderSize(c, 4096)
		}
		// Every stream answered: its status line is there.
		for i, r := range readers {
			line, err := r.ReadString('\n')
			if err != nil || !strings.Contains(line, " 200 ") {
				b.Fatalf("stream %d: %q %v", i, line, err)
			}
		}
		time.Sleep(200 * time.Millisecond) // the handlers reach their wait
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/streams/1024, "heap-KiB/stream")
		b.ReportMetric(float64(runtime.NumGoroutine()-goroutines)/streams, "goroutines/stream")

		cpu0 := cpuTime()
		idle := 2 * time.Second
		time.Sleep(idle)
		b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/idle.Seconds()/1000, "idle-cpu-ms/s")

		// One write, to every stream.
		start := time.Now()
		g.api(b, "POST", "/v1/memory_stores/"+store+"/memories", "", fmt.Sprintf(`{"path":"/w%d.md","content":"x"}`, time.Now().UnixNano()), nil)
		for i, r := range readers {
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					b.Fatalf("stream %d: %v", i, err)
				}
				if strings.HasPrefix(line, "event: memory.created") {
					break
				}
			}
		}
		b.ReportMetric(float64(time.Since(start).Milliseconds()), "fanout-ms")
		for _, c := range conns {
			c.Close()
		}
	}
}

// cpuTime is the CPU time, user and system, that the process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
