package images

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"strconv"
)

// hasher hashes a sequence of strings unambiguously (length-prefixed).
type hasher struct{ h hash.Hash }

func newHash() *hasher { return &hasher{h: sha256.New()} }

func (h *hasher) add(s string) {
	io.WriteString(h.h, strconv.Itoa(len(s)))
	io.WriteString(h.h, ":")
	io.WriteString(h.h, s)
}

// short returns the first 12 hex digits, the length of a Docker short id.
func (h *hasher) short() string { return hex.EncodeToString(h.h.Sum(nil))[:12] }
