package bulk

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
)

// Kind is where a spec's server comes from.
type Kind int

const (
	// KindNPM is a package of the npm registry.
	KindNPM Kind = iota + 1
	// KindImage is a container image in the local engine.
	KindImage
	// KindPyPI is a package of a Python package index (PyPI), fetched as
	// wheels.
	KindPyPI
	// KindRemote is a server reached over HTTP (not scanned here).
	KindRemote
	// KindOther is anything else an input names: an MCPB bundle, a NuGet
	// package, a local command.
	KindOther
)

var kindNames = map[Kind]string{KindNPM: "npm", KindImage: "image", KindPyPI: "pypi", KindRemote: "remote", KindOther: "other"}

func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// MarshalText keeps the JSON a name.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads a name.
func (k *Kind) UnmarshalText(b []byte) error {
	for v, s := range kindNames {
		if s == string(b) {
			*k = v
			return nil
		}
	}
	return fmt.Errorf("unknown kind %q", b)
}

// EnvVar is one environment variable an input gives the server.
type EnvVar struct {
	Name string `json:"name"`
	// Value is the value; empty for a secret, which gets a honeytoken of
	// the scan's bait (see Honeytoken).
	Value string `json:"value,omitempty"`
	// Secret is set for a secret the input leaves to the user: the scan
	// gives it a honeytoken, so that a server sending its own key away is
	// caught.
	Secret bool `json:"secret,omitempty"`
}

// Spec is one server to scan, as an input names it.
type Spec struct {
	Kind Kind `json:"kind"`
	// Name is the npm or PyPI package, the image reference, the remote URL
	// or the command.
	Name string `json:"name"`
	// Version is as the input asked: exact, a range, a tag or "" (the
	// latest); the fetch pins it.
	Version string `json:"version,omitempty"`
	// Tarball is set for a local npm tarball (tgz:PATH, Name its path):
	// a package packed with npm pack and never published.
	Tarball bool `json:"tarball,omitempty"`
	// Bin is the entry point the input names (a bin of the package), ""
	// for none.
	Bin string `json:"bin,omitempty"`
	// Extras are a Python package's extras asked for (pkg[a,b]); With,
	// the requirements a uvx --with line adds beside it.
	Extras []string `json:"extras,omitempty"`
	With   []string `json:"with,omitempty"`
	// Args follow the server's command.
	Args []string `json:"args,omitempty"`
	Env  []EnvVar `json:"env,omitempty"`
	// Source is where the input named it: FILE:LINE or FILE#POINTER.
	Source string `json:"source"`
	// Status is set when the input alone decides the outcome
	// (not-scanned-here, needs-config, failed-fetch for a refused spec);
	// Why says why. Zero: to be scanned.
	Status Status `json:"status,omitempty"`
	Why    string `json:"why,omitempty"`
	// Order is the spec's place in the whole list, before sharding (see
	// Number); not part of its key.
	Order int `json:"-"`
}

// String is the spec as a list line takes it (without env or source).
func (s Spec) String() string {
	v := s.Name
	if len(s.Extras) > 0 {
		v += "[" + strings.Join(s.Extras, ",") + "]"
	}
	if s.Version != "" && s.Kind == KindPyPI {
		v += s.Version // a PEP 440 specifier: ==1.2, >=1
	} else if s.Version != "" {
		v += "@" + s.Version
	}
	out := s.Kind.String() + ":" + v
	if s.Tarball {
		out = tarballPrefix + ":" + s.Name
	}
	if len(s.Args) > 0 {
		out += " -- " + strings.Join(s.Args, " ")
	}
	return out
}

// Key identifies the spec for duplicates and resumption: everything that
// changes the scan, not where the input named it.
func (s Spec) Key() string {
	env := make([]string, 0, len(s.Env))
	for _, e := range s.Env {
		env = append(env, fmt.Sprintf("%s=%q/%v", e.Name, e.Value, e.Secret))
	}
	slices.Sort(env)
	kind := s.Kind.String()
	if s.Tarball {
		kind = tarballPrefix
	}
	key := fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%q\x00%q", kind, s.Name, s.Version, s.Bin, s.Args, env)
	if len(s.Extras) > 0 || len(s.With) > 0 {
		key += fmt.Sprintf("\x00%q\x00%q", s.Extras, s.With)
	}
	return key
}

// Slug names the spec's files in the results directory: readable, and
// unique by a hash of the key.
func (s Spec) Slug() string {
	name := strings.NewReplacer("@", "", "/", "__", ":", "_").Replace(s.Name)
	var b strings.Builder
	for _, r := range name {
		if r < 0x80 && (r == '_' || r == '-' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	name = b.String()
	if len(name) > maxSlugName {
		name = name[:maxSlugName]
	}
	sum := sha256.Sum256([]byte(s.Key()))
	return s.Kind.String() + "-" + name + "-" + hex.EncodeToString(sum[:])[:slugHash]
}

const (
	// maxSlugName bounds the readable part of a slug: file names stay
	// short whatever a package is called.
	maxSlugName = 80
	// slugHash is how many hex digits of the key's hash a slug carries.
	slugHash = 12
)
