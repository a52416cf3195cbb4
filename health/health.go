// Package health answers /livez and /readyz in the health-check JSON of the IETF draft
// (draft-inadarei-api-health-check, application/health+json): /livez says that the process
// answers; /readyz runs every named check and answers 503, naming the checks that failed,
// until all pass. A load balancer or an orchestrator sends traffic by /readyz and restarts
// by /livez.
package health

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// A Check is one named part of readiness: Run answers what it observed (a number, or nil)
// or why the part is not ready.
type Check struct {
	Name string // "component:measurement", e.g. "stores:open"
	Type string // componentType: "datastore", "system", "component"
	Unit string // observedUnit of what Run returns, if anything
	Run  func(ctx context.Context) (observed any, err error)
}

// Checker serves the health routes.
type Checker struct {
	Checks  []Check
	Version string
	// Timeout bounds one run of the checks (default 5 s): a check that hangs fails.
	Timeout time.Duration
	// Detail tells whether a request may see why a check failed (the errors may name files);
	// without it, only the statuses show. Nil: everyone may.
	Detail func(r *http.Request) bool
}

// Status values of the format.
const (
	Pass = "pass"
	Fail = "fail"
)

// Result is one check's entry in the answer.
type Result struct {
	ComponentType string `json:"componentType,omitempty"`
	Status        string `json:"status"`
	ObservedValue any    `json:"observedValue,omitempty"`
	ObservedUnit  string `json:"observedUnit,omitempty"`
	Output        string `json:"output,omitempty"`
	Time          string `json:"time"`
}

// Report is the answer of /readyz and /livez.
type Report struct {
	Status      string              `json:"status"`
	Version     string              `json:"version,omitempty"`
	Description string              `json:"description"`
	Checks      map[string][]Result `json:"checks,omitempty"`
}

// Live answers that the process serves requests.
func (c *Checker) Live(w http.ResponseWriter, r *http.Request) {
	write(w, http.StatusOK, Report{Status: Pass, Version: c.Version, Description: "gitmem answers"})
}

// Ready runs every check, at once, and answers 200 if all pass, else 503.
func (c *Checker) Ready(w http.ResponseWriter, r *http.Request) {
	rep := c.Run(r.Context())
	if c.Detail != nil && !c.Detail(r) {
		for _, rs := range rep.Checks {
			for i := range rs {
				rs[i].Output, rs[i].ObservedValue, rs[i].ObservedUnit = "", nil, ""
			}
		}
	}
	status := http.StatusOK
	if rep.Status != Pass {
		status = http.StatusServiceUnavailable
	}
	write(w, status, rep)
}

// Run runs the checks and reports them.
func (c *Checker) Run(ctx context.Context) Report {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rep := Report{Status: Pass, Version: c.Version, Description: "gitmem is ready to serve", Checks: map[string][]Result{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, ch := range c.Checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := Result{ComponentType: ch.Type, Status: Pass}
			type outcome struct {
				observed any
				err      error
			}
			done := make(chan outcome, 1) // a check that hangs past the timeout leaves it later
			go func() { o, err := ch.Run(ctx); done <- outcome{o, err} }()
			var observed any
			var err error
			select {
			case o := <-done:
				observed, err = o.observed, o.err
			case <-ctx.Done():
				err = ctx.Err()
			}
			res.Time = time.Now().UTC().Format(time.RFC3339Nano)
			if err != nil {
				res.Status, res.Output = Fail, err.Error()
			} else if observed != nil {
				res.ObservedValue, res.ObservedUnit = observed, ch.Unit
			}
			mu.Lock()
			defer mu.Unlock()
			rep.Checks[ch.Name] = []Result{res}
			if err != nil {
				rep.Status = Fail
			}
		}()
	}
	wg.Wait()
	if rep.Status != Pass {
		var failed []string
		for name, rs := range rep.Checks {
			if rs[0].Status != Pass {
				failed = append(failed, name)
			}
		}
		sort.Strings(failed)
		rep.Description = "gitmem is not ready: " + strings.Join(failed, ", ")
	}
	return rep
}

func write(w http.ResponseWriter, status int, rep Report) {
	w.Header().Set("Content-Type", "application/health+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(rep)
}
