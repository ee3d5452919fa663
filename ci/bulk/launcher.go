package bulk

import (
	"fmt"
	"path"
	"strings"
)

// ParseLauncher reads a server command line that fetches a package and
// runs it, as MCP clients' configurations give them: npx [-y] PKG
// [ARG...], npm exec / npm x, pnpm dlx, pnpx, bunx, yarn dlx, each with
// its --package PKG BIN form (KindNPM); uvx PKG, pipx run PKG, uv tool
// run PKG (KindPyPI, named only). ok is false for any other command (the
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
		// A Python package's line: named, not fetched here (PyPI).
		if tool != "uvx" {
			args = args[1:]
			if tool == "uv" {
				args = args[1:]
			}
		}
		i := 0
		for i < len(args) && strings.HasPrefix(args[i], "-") {
			i++
		}
		if i >= len(args) {
			return Spec{}, true, fmt.Errorf("%s without a package", tool)
		}
		name, version, _ := strings.Cut(args[i], "@")
		if n, v, ok := strings.Cut(name, "=="); ok {
			name, version = n, v
		}
		return Spec{Kind: KindPyPI, Name: name, Version: version, Args: args[i+1:], Source: strings.Join(argv, " ")}, true, nil
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
