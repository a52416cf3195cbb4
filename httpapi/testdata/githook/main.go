// Command githook is the push hook of the httpapi tests' servers: it runs gitserve's hook as
// the gitmem binary does, but starts faster than a test binary built with -race.
package main

import (
	"fmt"
	"os"

	"github.com/gitmem/gitmem/gitserve"
)

func main() {
	gitserve.RunHookIfAsked()
	fmt.Fprintln(os.Stderr, "githook: run by git as a hook only")
	os.Exit(2)
}
