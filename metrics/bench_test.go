package metrics_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/httpapi"
	"github.com/gitmem/gitmem/metrics"
)

// BenchmarkWritesWithMetrics measures writes through the real API, 8 clients at a time,
// with the metrics' observers on (as gitmem serve runs) and off, in the same run: the cost
// of metrics on the write path is the ratio of the two.
func BenchmarkWritesWithMetrics(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "without"
		if on {
			name = "with"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			opts := gitstore.Options{}
			apiOpts := httpapi.Options{}
			if on {
				m := metrics.New()
				opts.Observer = m.Store()
				apiOpts.Observe = m.Request
			}
			d, err := gitstore.Open(context.Background(), dir, opts)
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			keys, _ := apikeys.Open(dir)
			hs := httptest.NewServer(httpapi.New(d, keys, apiOpts))
			defer hs.Close()
			st, err := d.CreateStore(context.Background(), gitstore.CreateStoreInput{Name: "bench", Actor: httpapi.LocalUser})
			if err != nil {
				b.Fatal(err)
			}
			url := hs.URL + "/v1/memory_stores/" + st.ID() + "/memories"
			body := strings.Repeat("x", 600)
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
			var n atomic.Int64
			b.SetParallelism(4) // 8 clients on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := n.Add(1)
					resp, err := client.Post(url, "application/json", strings.NewReader(fmt.Sprintf(`{"path":"/m%d.md","content":%q}`, i, body)))
					if err != nil {
						b.Error(err)
						return
					}
					resp.Body.Close()
					if resp.StatusCode != 200 {
						b.Errorf("write: %d", resp.StatusCode)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
		})
	}
}
