package gitstore

import (
	"context"
	"fmt"
	"os/exec"
	"testing"
	"time"
)

// BenchmarkRedact redacts a version near the start of a store's history, so that every
// later commit (n of them) is rewritten, and compares it with a baseline measured in the
// same run on the same repository: git repack -a -d, which reads and rewrites every object
// as the pruning after a rewrite must. x-repack is the ratio.
//
//	GITMEM_BENCH_LARGE=1 go test ./gitstore -run '^$' -bench Redact -benchtime 1x -timeout 60m
func BenchmarkRedact(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git is not installed")
	}
	for _, n := range benchSizes() {
		b.Run(fmt.Sprintf("versions=%d", n), func(b *testing.B) {
			ctx := context.Background()
			s := benchStore(b)
			// One redactable version per iteration: a secret, then its replacement.
			leaks := make([]string, b.N)
			for i := range leaks {
				p := fmt.Sprintf("/secrets/s%d.md", i)
				leaks[i] = mustBenchWrite(b, s, p, fmt.Sprintf("secret %d\n", i)).Version.ID
				mustBenchWrite(b, s, p, "rotated\n")
			}
			fill(b, s, n, benchPath)
			// The baseline runs in the store's writer, as the redaction does, so that the
			// writer's own pack merges do not run beside it.
			var repack time.Duration
			err := s.runTask(ctx, func() error {
				start := time.Now()
				err := s.repo.Git(ctx, "repack", "-a", "-d", "-q")
				repack = time.Since(start)
				s.repo.Reload()
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			rewritten := 0
			for i := 0; i < b.N; i++ {
				res, err := s.Redact(ctx, RedactInput{VersionID: leaks[i], Actor: apiActor})
				if err != nil {
					b.Fatal(err)
				}
				rewritten += res.Rewritten
			}
			b.StopTimer()
			per := b.Elapsed() / time.Duration(b.N)
			b.ReportMetric(float64(per)/float64(repack), "x-repack")
			b.ReportMetric(repack.Seconds(), "repack-s")
			b.ReportMetric(float64(rewritten)/float64(b.N), "commits/op")
			reportMaxRSS(b)
		})
	}
}

func mustBenchWrite(b *testing.B, s *Store, path, content string) WriteResult {
	b.Helper()
	res, err := s.Write(context.Background(), WriteInput{Path: path, Content: content, Actor: apiActor})
	if err != nil {
		b.Fatal(err)
	}
	return res
}
