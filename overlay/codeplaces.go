package overlay

import (
	"bytes"
	"encoding/json"
	"path"
	"slices"
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
// apply" has the same list). Names match whatever their case: on a
// case-insensitive host directory (vfat, exFAT, CIFS, ext4 casefold)
// .Git/config is git's .git/config.
var CodePlaces = []CodePlace{
	// A .git file (gitdir: elsewhere) is a repository too.
	dirPlace(".git"), dirPlace(".husky"), dirPlace(".githooks"), dirPlace(".vscode"), dirPlace(".idea"),
	nestedPlace(".github/workflows"), dirPlace(".circleci"), dirPlace(".ssh"),
	dirPlace(".devcontainer"), dirPlace(".cargo"), dirPlace(".mvn"), nestedPlace("gradle/wrapper"), dirPlace(".direnv"),
	namePlace(".gitmodules"), namePlace(".envrc"), componentPrefixPlace(".env"),
	namePlace("Makefile"), namePlace("GNUmakefile"), suffixPlace(".mk"),
	{"package.json (its scripts)", func(p string) bool { return strings.EqualFold(path.Base(p), "package.json") }},
	namePlace("package.yaml"), namePlace(".pnpmfile.cjs"), namePlace("binding.gyp"),
	namePlace(".npmrc"), prefixPlace(".yarnrc"),
	namePlace("pyproject.toml"), namePlace("setup.py"), namePlace("setup.cfg"), namePlace("conftest.py"), suffixPlace(".pth"),
	{"bin/activate*", func(p string) bool {
		return strings.EqualFold(path.Base(path.Dir(p)), "bin") && hasPrefixFold(path.Base(p), "activate")
	}},
	namePlace(".pre-commit-config.yaml"), namePlace(".gitlab-ci.yml"), namePlace("Jenkinsfile"),
	namePlace("lefthook.yml"), namePlace(".lefthook.yml"), namePlace("Justfile"), namePlace("Rakefile"), prefixPlace("Taskfile."),
	namePlace("mise.toml"), namePlace(".mise.toml"), namePlace("flake.nix"), namePlace("shell.nix"),
	namePlace("CMakePresets.json"), namePlace("CMakeUserPresets.json"), suffixPlace(".code-workspace"),
	prefixPlace("Dockerfile"), prefixPlace("Containerfile"), suffixPlace(".dockerfile"),
	prefixPlace("docker-compose."), prefixPlace("compose."),
	namePlace(".bashrc"), namePlace(".bash_profile"), namePlace(".bash_login"), namePlace(".bash_logout"),
	namePlace(".profile"), namePlace(".zshrc"), namePlace(".zprofile"), namePlace(".zshenv"), namePlace(".zlogin"),
	namePlace(".zlogout"), namePlace(".cshrc"), namePlace(".tcshrc"), namePlace(".kshrc"), namePlace(".mkshrc"),
	nestedPlace(".config/fish"),
}

// dirPlace: a directory of that name, anything below it, or a file in
// its place.
func dirPlace(dir string) CodePlace {
	return CodePlace{dir + "/", func(p string) bool {
		for _, d := range strings.Split(p, "/") {
			if strings.EqualFold(d, dir) {
				return true
			}
		}
		return false
	}}
}

// nestedPlace: a path of several components (".github/workflows"), at
// any depth, and anything below it.
func nestedPlace(dirs string) CodePlace {
	want := strings.Split(dirs, "/")
	return CodePlace{dirs + "/", func(p string) bool {
		parts := strings.Split(p, "/")
		for i := 0; i+len(want) <= len(parts); i++ {
			if slices.EqualFunc(parts[i:i+len(want)], want, strings.EqualFold) {
				return true
			}
		}
		return false
	}}
}

// componentPrefixPlace: any component that begins so (a .env file, a
// virtualenv named .env/).
func componentPrefixPlace(prefix string) CodePlace {
	return CodePlace{prefix + "*", func(p string) bool {
		for _, d := range strings.Split(p, "/") {
			if hasPrefixFold(d, prefix) {
				return true
			}
		}
		return false
	}}
}

func namePlace(name string) CodePlace {
	return CodePlace{name, func(p string) bool { return strings.EqualFold(path.Base(p), name) }}
}

func prefixPlace(prefix string) CodePlace {
	return CodePlace{prefix + "*", func(p string) bool { return hasPrefixFold(path.Base(p), prefix) }}
}

func suffixPlace(suffix string) CodePlace {
	return CodePlace{"*" + suffix, func(p string) bool {
		b := path.Base(p)
		return len(b) >= len(suffix) && strings.EqualFold(b[len(b)-len(suffix):], suffix)
	}}
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
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
