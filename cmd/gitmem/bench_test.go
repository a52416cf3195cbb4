package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestBench runs the load tool against the real server for a moment: every workload runs,
// with no error, beside the same work in this process; the bench store is gone afterwards.
func TestBench(t *testing.T) {
	c := newCLI(t)
	mustContain(t, "no server", c.fails("", "bench", "--duration", "200ms"), "gitmem bench drives a running server", "gitmem serve")
	_, _, url := startServe(t, c)
	out := c.ok("", "bench", "--clients", "1,2", "--duration", "200ms", "--memories", "120", "--size", "300", "--json")
	var res struct {
		Server   string `json:"server"`
		Memories int    `json:"memories"`
		Data     []struct {
			Server struct {
				Workload     string  `json:"workload"`
				Clients      int     `json:"clients"`
				Ops          int     `json:"ops"`
				Errors       int     `json:"errors"`
				FirstError   string  `json:"first_error"`
				OpsPerSecond float64 `json:"ops_per_second"`
				Latency      struct {
					P50, P99 float64
				} `json:"latency_ms"`
			} `json:"server"`
			InProcess *struct {
				Ops int `json:"ops"`
			} `json:"in_process"`
			Ratio float64 `json:"server_to_in_process"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("bench --json: %v\n%s", err, out)
	}
	if res.Server != url || res.Memories != 120 || len(res.Data) != 12 {
		t.Fatalf("bench: server %s, %d memories, %d rows", res.Server, res.Memories, len(res.Data))
	}
	for _, r := range res.Data {
		s := r.Server
		if s.Ops == 0 || s.Errors != 0 || s.OpsPerSecond <= 0 || s.Latency.P50 <= 0 || s.Latency.P99 < s.Latency.P50 {
			t.Errorf("%s with %d clients: %+v", s.Workload, s.Clients, s)
		}
		if r.InProcess == nil || r.InProcess.Ops == 0 || r.Ratio <= 0 {
			t.Errorf("%s with %d clients: no in-process run beside it", s.Workload, s.Clients)
		}
	}
	if list := c.ok("", "stores", "list"); strings.Contains(list, "bench-") {
		t.Errorf("the bench store is left behind:\n%s", list)
	}
	// The table names every workload.
	table := c.ok("", "bench", "--clients", "1", "--duration", "100ms", "--memories", "20", "--workloads", "read,write", "--no-local")
	mustContain(t, "table", table, "workload", "p99", "read", "write")
	for _, bad := range [][]string{{"--clients", "0"}, {"--clients", "x"}, {"--workloads", "nap"}, {"--memories", "0"}, {"--duration", "1ms"}} {
		_, stderr, code := c.run("", append([]string{"bench", "--duration", "100ms", "--memories", "5"}, bad...)...)
		if code != 2 {
			t.Errorf("bench %v: exit %d (%s)", bad, code, stderr)
		}
	}
}
