package corpus

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Server is one line of the servers file.
type Server struct {
	// Package is the npm name, Version the pinned version.
	Package, Version string
	// Entry is the script node runs, relative to the package's directory;
	// Args follow it.
	Entry string
	Args  []string
	// Env is KEY=VAL for the server (--env).
	Env []string
	// Why is the line's trailing comment: what the server is in the corpus
	// for.
	Why string
}

// Spec is the package as npm takes it: name@version.
func (s Server) Spec() string { return s.Package + "@" + s.Version }

// ErrSyntax is wrapped by every error of a malformed servers file.
var ErrSyntax = errors.New("servers file")

// Parse reads a servers file: one server a line,
//
//	PACKAGE@VERSION ENTRY [ARG...] [env:KEY=VAL...] [# why]
//
// blank lines and lines starting with # ignored.
func Parse(r io.Reader) ([]Server, error) {
	var out []Server
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line, why, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		at := strings.LastIndex(f[0], "@")
		if at <= 0 || at == len(f[0])-1 || len(f) < 2 {
			return nil, fmt.Errorf("%w: line %d: want PACKAGE@VERSION ENTRY [ARG...]", ErrSyntax, n)
		}
		s := Server{Package: f[0][:at], Version: f[0][at+1:], Entry: f[1], Why: strings.TrimSpace(why)}
		for _, a := range f[2:] {
			switch {
			case strings.HasPrefix(a, "env:"):
				kv := strings.TrimPrefix(a, "env:")
				if !strings.Contains(kv, "=") || strings.HasPrefix(kv, "=") {
					return nil, fmt.Errorf("%w: line %d: %q: want env:KEY=VAL", ErrSyntax, n, a)
				}
				s.Env = append(s.Env, kv)
			case strings.HasPrefix(a, "+"):
				// +scripts was npm install with scripts on the host; bulk
				// runs no package code there.
				return nil, fmt.Errorf("%w: line %d: %q: no install scripts run on the host", ErrSyntax, n, a)
			default:
				s.Args = append(s.Args, a)
			}
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

// ListLine is s as a line of a `mcpsandbox bulk` list: the entry named
// as a file of the package (bin:./ENTRY), the environment, then the
// arguments.
func (s Server) ListLine() string {
	f := []string{"npm:" + s.Spec(), "bin:./" + strings.TrimPrefix(s.Entry, "./")}
	for _, e := range s.Env {
		f = append(f, "env:"+e)
	}
	if len(s.Args) > 0 {
		f = append(append(f, "--"), s.Args...)
	}
	return strings.Join(f, " ")
}

// WriteList writes servers as a `mcpsandbox bulk` list, one a line, in
// order.
func WriteList(w io.Writer, servers []Server) error {
	fmt.Fprintln(w, "# written by the corpus run from ci/corpus/servers.txt")
	for _, s := range servers {
		if _, err := fmt.Fprintln(w, s.ListLine()); err != nil {
			return err
		}
	}
	return nil
}
