package readers

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// CompareJudged holds got's part (set copies it into an entry) to the
// judged table at path, or with update writes it there: sandbox's and
// proxy's TestReaderCasesThrough... tests each own a part of one table.
func CompareJudged(t testing.TB, path string, update bool, got map[string]Judged, set func(j *Judged, g Judged)) {
	t.Helper()
	file := map[string]Judged{}
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &file); err != nil {
			t.Fatal(err)
		}
	} else if !update {
		t.Fatal(err)
	}
	want := map[string]Judged{}
	for name, j := range file {
		want[name] = j
	}
	for name, g := range got {
		j := file[name]
		set(&j, g)
		file[name] = j
	}
	if update {
		b, err := json.MarshalIndent(file, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	for name := range got {
		a, _ := json.Marshal(want[name])
		b, _ := json.Marshal(file[name])
		if string(a) != string(b) {
			t.Errorf("%s: the transports now give\n%s\n%s has\n%s\n(go test ./sandbox/ ./sandbox/proxy/ -run ReaderCases -update-judged rewrites it; then run the readers' test)", name, b, path, a)
		}
	}
}
