package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/renameio/v2"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/wrap"
	"github.com/mcpsandbox/mcpsandbox/overlay"
)

// wrapBackup is what wrap keeps beside the file it rewrote, for unwrap.
type wrapBackup struct {
	// Wrote is the sum of the file wrap wrote; Original the file before,
	// byte for byte.
	Wrote    string `json:"wrote"`
	Original []byte `json:"original"`
}

// backupSuffix names a wrapped file's backup, beside it.
const backupSuffix = ".mcpsandbox-backup"

// maxWrapFile bounds a configuration wrap reads.
const maxWrapFile = 4 << 20

func runWrap(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("wrap", "wrap [--dry-run] [--run-flags FLAGS] CLIENT|FILE   (CLIENT: "+strings.Join(wrap.ClientNames(), ", ")+")", stderr)
	dry := fs.Bool("dry-run", false, "print the change as a diff, write nothing")
	runFlags := fs.String("run-flags", "", "flags for mcpsandbox run in each entry, split on spaces (e.g. \"--network sinkhole\")")
	binFlag := fs.String("bin", "", "the mcpsandbox each entry starts (default: this one)")
	fs.MarkHidden("bin")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return usageError{"wrap needs a client's name or a configuration file"}
	}
	path, err := configFile(fs.Arg(0))
	if err != nil {
		return err
	}
	doc, mode, err := readConfig(path)
	if err != nil {
		return err
	}
	bin := *binFlag
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			return fmt.Errorf("finding mcpsandbox's own path: %w", err)
		}
		if b, err := filepath.EvalSymlinks(bin); err == nil {
			bin = b
		}
	}
	rewrite := wrap.Wrap
	if strings.HasSuffix(path, ".toml") {
		rewrite = wrap.WrapTOML // Codex's config.toml
	}
	out, entries, err := rewrite(doc, bin, strings.Fields(*runFlags))
	if err != nil {
		return usageError{fmt.Sprintf("%s: %v", path, err)}
	}
	for _, e := range entries {
		what := "wrapped: starts through mcpsandbox run"
		if !e.Wrapped {
			what = "left: " + e.Why
		}
		fmt.Fprintf(stderr, "mcpsandbox: %s: %s\n", report.Printable(e.Name), what)
	}
	if string(out) == string(doc) {
		fmt.Fprintf(stdout, "%s: nothing to wrap\n", report.Printable(path))
		return nil
	}
	if *dry {
		fmt.Fprint(stdout, report.PrintableLines(overlay.UnifiedDiff("a/"+path, "b/"+path, doc, out)))
		return nil
	}
	if _, err := os.Stat(path + backupSuffix); err == nil {
		return usageError{fmt.Sprintf("%s changed since it was wrapped (%s%s is kept): unwrap it first", path, path, backupSuffix)}
	}
	b, _ := json.Marshal(wrapBackup{Wrote: wrap.Sum(out), Original: doc})
	if err := renameio.WriteFile(path+backupSuffix, b, 0o600); err != nil {
		return fmt.Errorf("keeping the backup: %w", err)
	}
	if err := renameio.WriteFile(path, out, mode); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	fmt.Fprintf(stdout, "wrapped %s (the original is kept in %s%s; mcpsandbox unwrap puts it back)\n", report.Printable(path), report.Printable(path), backupSuffix)
	return nil
}

func runUnwrap(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("unwrap", "unwrap CLIENT|FILE", stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return usageError{"unwrap needs a client's name or a configuration file"}
	}
	path, err := configFile(fs.Arg(0))
	if err != nil {
		return err
	}
	cur, mode, err := readConfig(path)
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(path + backupSuffix)
	if errors.Is(err, os.ErrNotExist) {
		return usageError{fmt.Sprintf("%s was not wrapped (no %s%s)", path, path, backupSuffix)}
	}
	if err != nil {
		return err
	}
	var bk wrapBackup
	if err := json.Unmarshal(raw, &bk); err != nil {
		return fmt.Errorf("reading %s%s: %w", path, backupSuffix, err)
	}
	orig, err := wrap.Unwrap(cur, bk.Original, bk.Wrote)
	if err != nil {
		return usageError{fmt.Sprintf("%s: %v", path, err)}
	}
	if err := renameio.WriteFile(path, orig, mode); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Remove(path + backupSuffix); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "unwrapped %s\n", report.Printable(path))
	return nil
}

// configFile is the file a client's name or a path names, where its
// links lead: a configuration kept in a dotfiles repository and linked
// stays a link, its target rewritten (and the backup beside it).
func configFile(clientOrFile string) (string, error) {
	path, err := wrap.ConfigPath(clientOrFile)
	if err != nil {
		return "", usageError{err.Error()}
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", usageError{err.Error()}
	}
	return real, nil
}

// readConfig reads a configuration and its mode, bounded.
func readConfig(path string) ([]byte, fs.FileMode, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, 0, usageError{err.Error()}
	}
	if fi.Size() > maxWrapFile {
		return nil, 0, usageError{fmt.Sprintf("%s: larger than %d MiB", path, maxWrapFile>>20)}
	}
	b, err := os.ReadFile(path)
	return b, fi.Mode().Perm(), err
}
