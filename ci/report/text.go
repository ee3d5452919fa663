package report

import "strings"

// OneLine folds whitespace, newlines included, so that a message fits on
// one line of a report, a log or an error.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
