package overlay

import (
	"bytes"
	"encoding/json"
	"path"
	"strings"
)

// CodePlace is a kind of file that runs code on the host once it is
// there: a git hook the next commit runs, an editor's task, a shell's
// start-up file, a build file. Apply holds back every file it would
// create or modify in one unless the path is named or --allow-exec given.
type CodePlace struct {
	// Name is what the refusal says (".git/", "Makefile", ...).
	Name string
	// match says whether a path (relative, slash-separated) is one.
	match func(p string) bool
}

// CodePlaces are the places, at any depth (docs/run.md "Changes and
// apply" has the same list).
var CodePlaces = []CodePlace{
	dirPlace(".git"), dirPlace(".husky"), dirPlace(".githooks"), dirPlace(".vscode"), dirPlace(".idea"),
	{".github/workflows/", func(p string) bool { return strings.Contains("/"+p, "/.github/workflows/") }},
	dirPlace(".circleci"), dirPlace(".ssh"),
	namePlace(".envrc"), prefixPlace(".env"),
	namePlace("Makefile"), namePlace("makefile"), namePlace("GNUmakefile"), suffixPlace(".mk"),
	{"package.json (its scripts)", func(p string) bool { return path.Base(p) == "package.json" }},
	namePlace(".npmrc"), prefixPlace(".yarnrc"),
	namePlace("pyproject.toml"), namePlace("setup.py"), namePlace("setup.cfg"),
	namePlace(".pre-commit-config.yaml"), namePlace(".gitlab-ci.yml"), namePlace("Jenkinsfile"),
	prefixPlace("Dockerfile"), prefixPlace("Containerfile"), suffixPlace(".dockerfile"),
	prefixPlace("docker-compose."), prefixPlace("compose."),
	namePlace(".bashrc"), namePlace(".bash_profile"), namePlace(".bash_login"), namePlace(".bash_logout"),
	namePlace(".profile"), namePlace(".zshrc"), namePlace(".zprofile"), namePlace(".zshenv"), namePlace(".zlogin"),
	namePlace(".zlogout"), namePlace(".cshrc"), namePlace(".tcshrc"), namePlace(".kshrc"), namePlace(".mkshrc"),
	{".config/fish/", func(p string) bool { return strings.Contains("/"+p, "/.config/fish/") }},
}

// dirPlace: anything below a directory of that name.
func dirPlace(dir string) CodePlace {
	return CodePlace{dir + "/", func(p string) bool {
		parts := strings.Split(p, "/")
		for _, d := range parts[:len(parts)-1] {
			if d == dir {
				return true
			}
		}
		return false
	}}
}

func namePlace(name string) CodePlace {
	return CodePlace{name, func(p string) bool { return path.Base(p) == name }}
}

func prefixPlace(prefix string) CodePlace {
	return CodePlace{prefix + "*", func(p string) bool { return strings.HasPrefix(path.Base(p), prefix) }}
}

func suffixPlace(suffix string) CodePlace {
	return CodePlace{"*" + suffix, func(p string) bool { return strings.HasSuffix(path.Base(p), suffix) }}
}

// runsCode names the first place p is in ("" for none).
func runsCode(p string) string {
	for _, c := range CodePlaces {
		if c.match(p) {
			return c.Name
		}
	}
	return ""
}

// scriptsChanged says whether a package.json's scripts differ between
// old and cur (oldKnown false, or either unreadable as JSON: they may).
func scriptsChanged(old []byte, oldKnown bool, cur []byte) bool {
	if !oldKnown || cur == nil {
		return true
	}
	scripts := func(b []byte) (json.RawMessage, bool) {
		if len(bytes.TrimSpace(b)) == 0 {
			return nil, true
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) != nil {
			return nil, false
		}
		return m["scripts"], true
	}
	a, okA := scripts(old)
	b, okB := scripts(cur)
	if !okA || !okB {
		return true
	}
	var va, vb any
	if (a != nil && json.Unmarshal(a, &va) != nil) || (b != nil && json.Unmarshal(b, &vb) != nil) {
		return true
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return !bytes.Equal(ja, jb)
}
