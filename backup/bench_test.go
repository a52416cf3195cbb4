package backup_test

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gitmem/gitmem/backup"
	"github.com/gitmem/gitmem/gitstore"
)

// seed makes a data directory with one store of n memories, one commit each (made with
// git fast-import, then imported as gitmem imports any history), and returns its root.
func seed(b *testing.B, n int) string {
	b.Helper()
	ctx := context.Background()
	root := filepath.Join(b.TempDir(), "data")
	d, err := gitstore.Open(ctx, root, gitstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	st, err := d.CreateStore(ctx, gitstore.CreateStoreInput{Name: "seed", Actor: gitstore.SystemActor})
	if err != nil {
		b.Fatal(err)
	}
	id := st.ID()
	repo := gitstore.Layout{Root: root}.StoreRepo(id)
	head := st.Head()
	d.Close()
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Env = append(os.Environ(), "GIT_DIR="+repo)
	in, _ := cmd.StdinPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(in)
	when := time.Now().Add(-time.Duration(n) * time.Second).Unix()
	for i := range n {
		content := fmt.Sprintf("# Note %d\n\nThe team decided item %d: keep it short, and write why. %0300d\n", i, i, i)
		fmt.Fprintf(w, "commit refs/heads/main\ncommitter Seed <seed@example.com> %d +0000\ndata 8\nnote %03d\n", when+int64(i), i%1000)
		if i == 0 {
			fmt.Fprintf(w, "from %s\n", head)
		}
		fmt.Fprintf(w, "M 100644 inline notes/%03d/%06d.md\ndata %d\n%s\n", i%100, i, len(content), content)
	}
	w.Flush()
	in.Close()
	if err := cmd.Wait(); err != nil {
		b.Fatal(err)
	}
	exec.Command("git", "--git-dir", repo, "repack", "-adq").Run()
	// Reopen: the catalog catches up with the new history.
	if d, err = gitstore.Open(ctx, root, gitstore.Options{}); err != nil {
		b.Fatal(err)
	}
	if st, err = d.Store(ctx, id); err != nil {
		b.Fatal(err)
	}
	if _, err := st.Info(ctx); err != nil {
		b.Fatal(err)
	}
	d.Close()
	return root
}

func size(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, e fs.DirEntry, _ error) error {
		if e != nil && e.Type().IsRegular() {
			if i, err := e.Info(); err == nil {
				n += i.Size()
			}
		}
		return nil
	})
	return n
}

// BenchmarkBackup measures a full backup, an incremental one and a restore's check of a
// store of GITMEM_BENCH_MEMORIES memories (default 10,000), against tar of the data
// directory in the same run: time and size.
func BenchmarkBackup(b *testing.B) {
	n := 10_000
	if v, err := strconv.Atoi(os.Getenv("GITMEM_BENCH_MEMORIES")); err == nil {
		n = v
	}
	root := seed(b, n)
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		dest := filepath.Join(b.TempDir(), "backup")
		start := time.Now()
		if _, err := backup.Backup(ctx, backup.Dir{Root: root}, dest, backup.Options{}); err != nil {
			b.Fatal(err)
		}
		full := time.Since(start)
		start = time.Now()
		if _, err := backup.Backup(ctx, backup.Dir{Root: root}, dest, backup.Options{}); err != nil {
			b.Fatal(err)
		}
		again := time.Since(start)
		tarFile := filepath.Join(b.TempDir(), "data.tar")
		start = time.Now()
		if out, err := exec.Command("tar", "-cf", tarFile, "-C", root, ".").CombinedOutput(); err != nil {
			b.Fatalf("tar: %v %s", err, out)
		}
		tarTime := time.Since(start)
		st, _ := os.Stat(tarFile)
		b.ReportMetric(full.Seconds(), "backup-s")
		b.ReportMetric(again.Seconds(), "again-s")
		b.ReportMetric(tarTime.Seconds(), "tar-s")
		b.ReportMetric(float64(size(dest))/(1<<20), "backup-MiB")
		b.ReportMetric(float64(st.Size())/(1<<20), "tar-MiB")
		b.ReportMetric(float64(size(root))/(1<<20), "data-MiB")
	}
}
