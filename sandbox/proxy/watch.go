package proxy

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// watchSet is the values run watches as honeytokens are: the --secret
// variables', given at the start, and what the user typed into the
// server's elicitations, added as the client answers them. Seen later
// in a network effect, a value is secret-exfiltration; it is kept out
// of the log as its placeholder.
type watchSet struct {
	mu     sync.Mutex
	values map[string]string // name -> value
	names  []string          // in the order added
}

func newWatchSet() *watchSet { return &watchSet{values: map[string]string{}} }

// add watches value under name; false when it is too short to watch (it
// would be found everywhere), the set is full, or it is watched already.
func (w *watchSet) add(name, value string) bool {
	if len(value) < minSecret {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.names) >= maxWatched || slices.ContainsFunc(w.names, func(n string) bool { return w.values[n] == value }) {
		return false
	}
	w.values[name] = value
	w.names = append(w.names, name)
	return true
}

func (w *watchSet) full() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.names) >= maxWatched
}

// find names the values data holds, sorted (the session's Secrets).
func (w *watchSet) find(data string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for n, v := range w.values {
		if strings.Contains(data, v) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// placeholders keep the values out of what is written.
func (w *watchSet) placeholders() []report.Placeholder {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]report.Placeholder, 0, len(w.names))
	for _, n := range w.names {
		out = append(out, report.Placeholder{Value: w.values[n], Role: "<" + n + ">"})
	}
	return out
}

// elicited watches the strings of an elicitation's answer (its
// content's values, at any depth) as honeytokens named elicited-N; it
// returns the names given, how many were too short to watch, and how
// many found the set full.
func (w *watchSet) elicited(content any, n *int) (names []string, short, full int) {
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			*n++
			name := fmt.Sprintf("elicited-%d", *n)
			switch {
			case w.add(name, x):
				names = append(names, name)
			case len(x) < minSecret:
				if x != "" {
					short++
				}
			case w.full():
				full++
			}
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				walk(x[k])
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(content)
	return names, short, full
}

// maxWatched bounds the values watched: each costs a search of every
// network effect's data.
const maxWatched = 256
