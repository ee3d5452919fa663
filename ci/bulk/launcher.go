package bulk

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// ParseLauncher reads a server command line that fetches a package and
// runs it, as MCP clients' configurations give them: npx [-y] PKG
// [ARG...], npm exec / npm x, pnpm dlx, pnpx, bunx, yarn dlx, each with
// its --package PKG BIN form (KindNPM); uvx [--from PKG] [--with REQ]
// PKG[@VER] [ARG...], pipx run [--spec PKG] APP [ARG...], uv tool run
// (KindPyPI). ok is false for any other command (the
// command is run as given); err, a launcher line no fetch can take (a
// shell command, no package).
func ParseLauncher(argv []string) (s Spec, ok bool, err error) {
	if len(argv) == 0 {
		return Spec{}, false, nil
	}
	tool := path.Base(argv[0])
	args := argv[1:]
	switch {
	case tool == "uvx", tool == "pipx" && len(args) > 0 && args[0] == "run", tool == "uv" && len(args) > 1 && args[0] == "tool" && args[1] == "run":
		if tool != "uvx" {
			args = args[1:]
			if tool == "uv" {
				tool, args = "uv tool run", args[1:]
			} else {
				tool = "pipx run"
			}
		}
		s, err := pythonSpec(tool, args)
		if err != nil {
			return Spec{}, true, fmt.Errorf("%s: %w", tool, err)
		}
		s.Source = strings.Join(argv, " ")
		return s, true, nil
	case tool == "npx", tool == "pnpx", tool == "bunx":
	case (tool == "npm") && len(args) > 0 && (args[0] == "exec" || args[0] == "x"):
		tool, args = "npm "+args[0], args[1:]
	case (tool == "pnpm" || tool == "yarn") && len(args) > 0 && args[0] == "dlx":
		tool, args = tool+" dlx", args[1:]
	default:
		return Spec{}, false, nil
	}
	if err := npxSpec(&s, args); err != nil {
		return Spec{}, true, fmt.Errorf("%s: %w", tool, err)
	}
	s.Source = strings.Join(argv, " ")
	return s, true, nil
}

// Options of uvx (uv tool run) and pipx run, by whether they take a
// value. One that changes where the package comes from is refused: the
// index is --index-url's, the user's, not the line's. Any other option
// is refused as not understood, rather than read as the package.
var (
	pyLauncherValue = map[string]bool{"--from": true, "--spec": true, "--with": true, "-w": true, "--python": true, "-p": true,
		"--pip-args": true, "--color": true, "--cache-dir": true, "--directory": true, "--project": true, "--config-file": true}
	pyLauncherFlag = map[string]bool{"-q": true, "--quiet": true, "-v": true, "--verbose": true, "--no-cache": true, "-n": true,
		"--offline": true, "--refresh": true, "--isolated": true, "--native-tls": true, "--no-progress": true, "--no-python-downloads": true}
	pyLauncherIndex = map[string]bool{"--index-url": true, "-i": true, "--default-index": true, "--index": true, "--extra-index-url": true,
		"--find-links": true, "-f": true, "--no-index": true, "--with-editable": true, "--with-requirements": true, "--editable": true, "-e": true}
)

// pythonSpec reads a Python launcher's arguments after its command.
func pythonSpec(tool string, args []string) (Spec, error) {
	s := Spec{Kind: KindPyPI}
	from := ""
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if !strings.HasPrefix(a, "-") {
			break
		}
		flag, val, hasVal := strings.Cut(a, "=")
		if pyLauncherIndex[flag] {
			return Spec{}, fmt.Errorf("%s names where the package comes from: give the index to mcpsandbox as --index-url instead", flag)
		}
		if pyLauncherFlag[flag] && !hasVal {
			continue
		}
		if !pyLauncherValue[flag] {
			return Spec{}, fmt.Errorf("option %s not understood", flag)
		}
		if !hasVal {
			i++
			if i >= len(args) {
				return Spec{}, fmt.Errorf("%s without its value", flag)
			}
			val = args[i]
		}
		switch flag {
		case "--from", "--spec":
			if from != "" {
				return Spec{}, fmt.Errorf("%s given twice", flag)
			}
			from = val
		case "--with", "-w":
			for _, w := range strings.Split(val, ",") {
				if w = strings.TrimSpace(w); w != "" {
					s.With = append(s.With, w)
				}
			}
		}
	}
	rest := args[min(i, len(args)):]
	pkg := from
	if from != "" {
		if len(rest) == 0 {
			return Spec{}, errors.New("--from without a command")
		}
		s.Bin, rest = rest[0], rest[1:]
	} else {
		if len(rest) == 0 {
			return Spec{}, errors.New("no package")
		}
		pkg, rest = rest[0], rest[1:]
	}
	name, extras, version, err := pythonPackageArg(pkg)
	if err != nil {
		return Spec{}, err
	}
	s.Name, s.Extras, s.Version, s.Args = name, extras, version, rest
	return s, nil
}

// pythonPackageArg reads a launcher's package: NAME[EXTRAS] with @VER
// (uvx's form, @latest for none) or a PEP 440 specifier (==VER, >=VER).
func pythonPackageArg(pkg string) (name string, extras []string, version string, err error) {
	text := pkg
	if n, v, ok := strings.Cut(pkg, "@"); ok {
		if strings.Contains(v, "://") || strings.TrimSpace(v) == "" {
			return "", nil, "", fmt.Errorf("%q names a URL or nothing after @: only a package of the index is fetched", pkg)
		}
		text = n
		if v != "latest" {
			text += "==" + v
		}
	}
	r, err := parsePyRequirement(text)
	if err != nil {
		return "", nil, "", err
	}
	if r.marker != nil {
		return "", nil, "", fmt.Errorf("%q: a marker on the package", pkg)
	}
	spec := make([]string, 0, len(r.specs))
	for _, sp := range r.specs {
		t := sp.text
		if sp.wildcard {
			t += ".*"
		}
		spec = append(spec, sp.op+t)
	}
	return r.name, r.extras, strings.Join(spec, ","), nil
}
