package main

import "github.com/gitmem/gitmem/internal/suspect"

// shown is s as a line of the CLI's text output shows what others wrote (a proposal's
// title, a comment, an actor's name, a memory path): each control character (C0, DEL, C1)
// and each bidirectional control as its Go escape, \x1b for ESC, so that no text that an
// agent or a pushed commit chose can move the cursor, rewrite or reorder a line the reader
// sees, set the terminal's title, or break a table's columns. Which runes those are is
// package suspect's to say, for the review UI too.
func shown(s string) string { return suspect.String(s, "") }

// shownText is shown for a multi-line text (a diff): its newlines and tabs stay.
func shownText(s string) string { return suspect.String(s, "\n\t") }
