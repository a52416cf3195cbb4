package main

import (
	"os"
	"runtime"
)

// spareProcs is how many Go processors (GOMAXPROCS) serve runs beyond the runtime's default of
// one per CPU it may use. At the end of a group the store's writer wakes every request of the
// group at once (up to 64 under 64 clients), and with one processor per CPU they waited for
// one: Go's scheduler-latency profile of 3 s of wrk put 51.6 s of waiting there, 22.7 s with
// two spare processors. On the 2-core machine, under wrk with 64 clients, three pairs: p99
// 22.8-25.9 ms (2.4x-2.5x p50) against 48.0-59.4 ms (4.5x-6.0x), and 12-14% more writes a
// second; 3, 4 and 8 processors did alike (docs/performance.md).
const spareProcs = 2

// addSpareProcs raises GOMAXPROCS by spareProcs, unless the environment sets GOMAXPROCS, and
// returns the value in force. Setting it stops the runtime from following later changes of
// the CPU limit of a container; a restart picks them up.
func addSpareProcs() int {
	if os.Getenv("GOMAXPROCS") != "" {
		return runtime.GOMAXPROCS(0)
	}
	n := runtime.GOMAXPROCS(0) + spareProcs
	runtime.GOMAXPROCS(n)
	return n
}
