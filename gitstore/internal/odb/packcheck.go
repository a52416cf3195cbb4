package odb

import (
	"bytes"
	"crypto/sha1"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// fullCheckBelow is the size under which a pack and its index are checked against their
// checksums whole at Open; larger ones (merged packs, always written durably) only by
// their trailers.
const fullCheckBelow = 1 << 20

// removeBrokenPacks removes the packs whose files do not hold what their checksums say, or
// that lack their index. A pack placed without fsync (publish.go) may be missing, cut short
// or zeroed after a power loss; its objects are either in the journal, which recovery
// installs again, or were never referenced. git would report such a pack as broken, and
// go-git fails on a pack without its index. It runs at Open, when no git process writes into
// the repository: pushes come through the server, which opens the store first, and the data
// directory's lock keeps other gitmem processes out (a git process run by hand on the
// repository meanwhile is not supported).
func removeBrokenPacks(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		base, ok := strings.CutSuffix(e.Name(), ".pack")
		if !ok || !strings.HasPrefix(base, "pack-") {
			continue
		}
		base = filepath.Join(dir, base)
		if !packIntact(base) {
			slog.Warn("removing a pack cut short or damaged by a crash", "pack", base+".pack")
			for _, ext := range []string{".idx", ".pack", ".rev"} {
				os.Remove(base + ext)
			}
		}
	}
}

// packIntact checks a pack and its index: the pack's trailer is the checksum that the
// index names, and small files hash to their trailers.
func packIntact(base string) bool {
	idx, err := readCheckable(base + ".idx")
	if err != nil || len(idx) < idxHeader+40 || !bytes.Equal(idx[:4], idxMagic) {
		return false
	}
	f, err := os.Open(base + ".pack")
	if err != nil {
		return false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() < 32 {
		return false
	}
	var tail [20]byte
	if _, err := f.ReadAt(tail[:], st.Size()-20); err != nil || !bytes.Equal(tail[:], idx[len(idx)-40:len(idx)-20]) {
		return false
	}
	if st.Size() >= fullCheckBelow {
		return true
	}
	pack, err := io.ReadAll(f)
	return err == nil && len(pack) >= 32 && string(pack[:4]) == "PACK" && trailerMatches(pack)
}

// readCheckable returns an index whole if it is small and its checksum holds; a large one
// only by its head and its last 40 bytes (the pack's checksum and its own), which is all
// packIntact reads of it.
func readCheckable(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() < fullCheckBelow {
		b, err := io.ReadAll(f)
		if err != nil || len(b) < 20 || !trailerMatches(b) {
			return nil, errors.New("index damaged")
		}
		return b, nil
	}
	b := make([]byte, idxHeader+40)
	if _, err := f.ReadAt(b[:idxHeader], 0); err != nil {
		return nil, err
	}
	if _, err := f.ReadAt(b[idxHeader:], st.Size()-40); err != nil {
		return nil, err
	}
	return b, nil
}

// trailerMatches reports whether b ends with the SHA-1 of what comes before.
func trailerMatches(b []byte) bool {
	sum := sha1.Sum(b[:len(b)-20])
	return bytes.Equal(sum[:], b[len(b)-20:])
}
