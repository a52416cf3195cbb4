// Package english words the counts in gitmem's messages.
package english

import (
	"strconv"
	"strings"
)

// Count is n of noun, in the plural unless n is 1: "1 store", "2 stores", "3 memories".
// noun is a regular English noun (a consonant and y make ies).
func Count(n int, noun string) string {
	s := strconv.Itoa(n) + " "
	switch {
	case n == 1:
		return s + noun
	case strings.HasSuffix(noun, "y") && !strings.ContainsAny(noun[max(len(noun)-2, 0):len(noun)-1], "aeiou"):
		return s + strings.TrimSuffix(noun, "y") + "ies"
	}
	return s + noun + "s"
}
