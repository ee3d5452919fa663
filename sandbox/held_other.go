//go:build !linux

package sandbox

import "errors"

// heldFiles needs the host's /proc; elsewhere changes come from the API.
type heldFiles struct{}

type held struct {
	paths    map[string]bool
	unplaced bool
}

func (h held) union(o held) held { return held{unplaced: h.unplaced || o.unplaced} }

func newHeldFiles(pid1 int, mounts ...string) (*heldFiles, error) {
	return nil, errors.New("finding held files needs Linux")
}

func (h *heldFiles) look() (held, error) { return held{unplaced: true}, nil }
