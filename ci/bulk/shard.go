package bulk

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Shard is one machine's share of a batch: shard I of N takes the specs
// whose key hashes to I modulo N, so N machines given I = 0..N-1 cover the
// list exactly once, each deciding alone, with no coordination and no
// registry query. The hash is of the spec's key as the list gives it
// (Spec.Key: kind, name, version asked, bin, arguments, environment): a
// version the list pins is part of it; an unversioned spec is pinned by
// the fetch, after sharding, so that every machine agrees on its share
// whatever the registry published meanwhile. The zero Shard is the whole
// list.
type Shard struct{ I, N int }

// ErrShard is wrapped by every malformed --shard.
var ErrShard = errors.New("invalid shard")

// ParseShard reads I/N, 0 <= I < N.
func ParseShard(s string) (Shard, error) {
	is, ns, ok := strings.Cut(s, "/")
	i, ierr := strconv.Atoi(is)
	n, nerr := strconv.Atoi(ns)
	if !ok || ierr != nil || nerr != nil || n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("%w %q: want I/N with 0 <= I < N", ErrShard, s)
	}
	return Shard{I: i, N: n}, nil
}

func (sh Shard) String() string {
	if sh.N == 0 {
		return "all"
	}
	return fmt.Sprintf("%d/%d", sh.I, sh.N)
}

// Has says whether the spec is in this shard.
func (sh Shard) Has(s Spec) bool {
	if sh.N <= 1 {
		return true
	}
	sum := sha256.Sum256([]byte(s.Key()))
	return binary.BigEndian.Uint64(sum[:8])%uint64(sh.N) == uint64(sh.I)
}

// Number gives each spec its place in the whole list (Spec.Order), before
// sharding: the merge of the shards' results puts the rows back in the
// order one machine would have written them.
func Number(specs []Spec) []Spec {
	for i := range specs {
		specs[i].Order = i
	}
	return specs
}

// Pick keeps the specs of this shard, in order.
func (sh Shard) Pick(specs []Spec) []Spec {
	var out []Spec
	for _, s := range specs {
		if sh.Has(s) {
			out = append(out, s)
		}
	}
	return out
}
