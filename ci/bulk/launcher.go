package bulk

import (
	"fmt"
	"path"
	"strings"
)

// ParseLauncher reads a server command line that fetches an npm package
// and runs it, as MCP clients' configurations give them: npx [-y] PKG
// [ARG...], npm exec / npm x, pnpm dlx, pnpx, bunx, yarn dlx, each with
// its --package PKG BIN form. ok is false for any other command (the
// command is run as given); err, a launcher line no fetch can take (a
// shell command, no package).
func ParseLauncher(argv []string) (s Spec, ok bool, err error) {
	if len(argv) == 0 {
		return Spec{}, false, nil
	}
	tool := path.Base(argv[0])
	args := argv[1:]
	switch {
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
