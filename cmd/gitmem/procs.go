package main

import (
	"os"
	"runtime"
)

// spareProcs is how many Go processors (GOMAXPROCS) serve runs beyond the runtime's default of
// one per CPU it may use. At the end of a group the store's writer wakes every request of the
// group at once (up to 64 under 64 clients), on its own processor; with one processor per
// CPU they waited there behind the writer, or behind a thread that the kernel had set aside
// for another program. Two spare processors let the kernel run them meanwhile. On the 2-core
// machine, under wrk with 64 clients: p99 23-26 ms (2.4x p50) against 42-53 ms (4.2x-5.5x),
// and 5-15% more writes a second; 3, 4 and 8 processors did alike (docs/performance.md).
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
