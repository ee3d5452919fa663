package main

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/mcpsandbox/mcpsandbox/ci/bulk"
	"github.com/mcpsandbox/mcpsandbox/probes"
)

// maxConfigFile bounds a client configuration read by --from-config.
const maxConfigFile = 4 << 20

// configEntry reads --from-config's FILE[#SERVER].
func configEntry(spec string) (bulk.ConfigEntry, error) {
	file, server, _ := strings.Cut(spec, "#")
	f, err := os.Open(file)
	if err != nil {
		return bulk.ConfigEntry{}, usageError{fmt.Sprintf("--from-config %s: %v", spec, err)}
	}
	defer f.Close()
	b := make([]byte, maxConfigFile+1)
	n, _ := f.Read(b)
	for n < len(b) {
		m, err := f.Read(b[n:])
		n += m
		if err != nil || m == 0 {
			break
		}
	}
	if n > maxConfigFile {
		return bulk.ConfigEntry{}, usageError{fmt.Sprintf("--from-config %s: larger than %d MiB", spec, maxConfigFile>>20)}
	}
	e, err := bulk.ReadConfigFile(file, b[:n], server)
	if err != nil {
		return bulk.ConfigEntry{}, usageError{fmt.Sprintf("--from-config %s: %v", spec, err)}
	}
	if e.URL != "" && e.Command == "" {
		return bulk.ConfigEntry{}, usageError{fmt.Sprintf("--from-config %s: server %q is remote (%s): nothing runs here to sandbox", spec, e.Name, e.URL)}
	}
	return e, nil
}

// fromConfig gives the entry's command line as argv, and its environment:
// for a scan (honeytokens) each variable whose name says it holds a
// secret gets the bait's honeytoken of the seed the scan will use (drawn
// now if none was given), whatever the file says; for run, the values as
// written. A value or argument the client fills in (${input:...}) that
// is not such a secret is refused: give it with --env, or the line after
// --.
func fromConfig(spec string, argv []string, honeytokens bool, seed **uint64) (cmd, env []string, err error) {
	if len(argv) > 0 {
		return nil, nil, usageError{"--from-config names the server: give no command after -- with it"}
	}
	e, err := configEntry(spec)
	if err != nil {
		return nil, nil, err
	}
	var tokens probes.Honeytokens
	if honeytokens {
		if *seed == nil {
			s := probes.RandomSeed()
			*seed = &s
		}
		tokens = probes.NewBait(**seed).Tokens
	}
	var missing []string
	for _, a := range e.Args {
		if strings.Contains(a, "${") {
			missing = append(missing, "argument "+a)
		}
	}
	keys := make([]string, 0, len(e.Env))
	for k := range e.Env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := e.Env[k]
		switch {
		case honeytokens && bulk.SecretName(k):
			v = bulk.Honeytoken(k, tokens)
		case strings.Contains(v, "${"):
			missing = append(missing, "env "+k)
			continue
		}
		env = append(env, k+"="+v)
	}
	if len(missing) > 0 {
		return nil, nil, usageError{fmt.Sprintf("--from-config %s: filled in by the client, with no value here: %s (give each with --env KEY=VAL, or the line after --)", spec, strings.Join(missing, ", "))}
	}
	return append([]string{e.Command}, e.Args...), env, nil
}
