package bulk

import (
	"net/url"
	"strings"
	"testing"
)

func FuzzAttackRequirement(f *testing.F) {
	for _, s := range []string{"a>=1,<2; python_version < '3.9' and (extra == 'x' or os_name in 'posix')", "a[b,c] (>=1.0) ; sys_platform == \"linux\"", "a===1", "a~=1.2.3; python_version ~= '3.1'"} {
		f.Add(s)
	}
	env := newPyEnv("3.12.1", "x86_64")
	f.Fuzz(func(t *testing.T, s string) {
		r, err := parsePyRequirement(s)
		if err != nil {
			return
		}
		if r.marker != nil {
			r.marker.eval(env, []string{"x"})
		}
		for _, v := range []string{"1", "1.0rc1", "1!2.post3.dev4+abc", "0"} {
			pv, _ := parsePyVersion(v)
			r.specs.contains(pv)
		}
		r.specs.pinned()
		r.specs.allowsPre()
	})
}

func FuzzAttackVersion(f *testing.F) {
	f.Add("1.0", ">=1")
	f.Fuzz(func(t *testing.T, a, b string) {
		v, err := parsePyVersion(a)
		if err != nil {
			return
		}
		_ = v.String()
		if w, err := parsePyVersion(v.String()); err != nil || w.compare(v) != 0 {
			t.Errorf("%q -> %q does not read back (%v)", a, v.String(), err)
		}
		if s, err := parsePySpecifiers(b); err == nil {
			s.contains(v)
		}
	})
}

func FuzzAttackIndexPage(f *testing.F) {
	f.Add(`<a href="x-1.0-py3-none-any.whl#sha256=` + strings.Repeat("ab", 32) + `" data-yanked data-requires-python="&gt;=3">`)
	base, _ := url.Parse("http://127.0.0.1:1/simple/x/")
	p := PyPI{Target: PyTarget{Version: "3.12.1", Machine: "x86_64", GlibcMajor: 2, GlibcMinor: 36}}
	f.Fuzz(func(t *testing.T, body string) {
		files := parseIndexPage(base, "x", []byte(body))
		for _, fl := range files {
			if checkFileName(fl.file) != nil {
				t.Errorf("file %q", fl.file)
			}
		}
		p.pick("x", files, pyRequirement{})
	})
}

func FuzzAttackConsoleScripts(f *testing.F) {
	f.Add("[console_scripts]\na = b.c:d [x]\n")
	f.Fuzz(func(t *testing.T, s string) {
		m := map[string]string{}
		if readConsoleScripts([]byte(s), m) != nil {
			return
		}
		for k, v := range m {
			b, err := launcher(k, v, PackageTarget+"/lib")
			if err != nil {
				t.Errorf("checked script %q=%q: %v", k, v, err)
				continue
			}
			lines := strings.Split(string(b), "\n")
			if len(lines) != 10 {
				t.Errorf("launcher has %d lines:\n%s", len(lines), b)
			}
		}
	})
}
