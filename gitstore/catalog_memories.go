package gitstore

import (
	"bytes"
	"fmt"
	"iter"

	bolt "go.etcd.io/bbolt"
)

// The catalog's memories: their states (bucket mem) and the index of live paths (bucket
// path).

func (c catTx) memory(id string) (memRec, bool, error) {
	raw := c.tx.Bucket(bMem).Get([]byte(id))
	if raw == nil {
		return memRec{}, false, nil
	}
	r, err := decodeMemory(id, raw)
	return r, err == nil, err
}

func (c catTx) putMemory(id string, r memRec) error {
	b, err := encodeMemory(r)
	if err != nil {
		return err
	}
	return c.tx.Bucket(bMem).Put([]byte(id), b)
}

// live returns the memory at path, if one lives there.
func (c catTx) live(path string) (string, memRec, bool, error) {
	id, ok := c.pathID(path)
	if !ok {
		return "", memRec{}, false, nil
	}
	r, ok, err := c.memory(id)
	if err == nil && !ok {
		err = fmt.Errorf("catalog path %s names unknown memory %s", path, id)
	}
	return id, r, ok, err
}

// pathID returns the id of the memory that lives at path, if one does.
func (c catTx) pathID(path string) (string, bool) {
	id := c.tx.Bucket(bPath).Get([]byte(path))
	return string(id), id != nil
}

// setPath records that memory id lives at path.
func (c catTx) setPath(path, id string) error {
	return c.tx.Bucket(bPath).Put([]byte(path), []byte(id))
}

// freePath removes the path entry of path if it names memory id. After the two sides of a
// merge are applied one after the other, the entry may name another memory, which stays.
func (c catTx) freePath(path, id string) error {
	if got, _ := c.pathID(path); got != id {
		return nil
	}
	return c.deletePath(path)
}

// deletePath removes the path entry of path, whichever memory it names.
func (c catTx) deletePath(path string) error {
	return c.tx.Bucket(bPath).Delete([]byte(path))
}

// pathsBelow yields the live paths that start with prefix ("" for all), in path order,
// each with the id of its memory.
func (c catTx) pathsBelow(prefix string) iter.Seq2[string, string] {
	return func(yield func(path, id string) bool) {
		p := []byte(prefix)
		cur := c.tx.Bucket(bPath).Cursor()
		for k, v := cur.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = cur.Next() {
			if !yield(string(k), string(v)) {
				return
			}
		}
	}
}

// pathCursor walks the live paths in path order (key: path, value: memory id) for a
// listing that seeks past the folders it rolls up. What it returns is valid until the
// transaction ends.
type pathCursor struct{ c *bolt.Cursor }

func (c catTx) pathCursor() pathCursor { return pathCursor{c.tx.Bucket(bPath).Cursor()} }

// seek moves to the first path at or after path.
func (p pathCursor) seek(path []byte) (k, id []byte) { return p.c.Seek(path) }

func (p pathCursor) next() (k, id []byte) { return p.c.Next() }
