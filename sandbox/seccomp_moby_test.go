//go:build linux

package sandbox

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/moby/profiles/seccomp"
)

// TestDefaultProfileIsMobys: the embedded copy is moby's default profile
// of the module version in go.mod (see moby-seccomp/README.md).
func TestDefaultProfileIsMobys(t *testing.T) {
	b, err := json.Marshal(seccomp.DefaultProfile())
	if err != nil {
		t.Fatal(err)
	}
	var want, got any
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(mobyDefault, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Error("moby-seccomp/default.json differs from seccomp.DefaultProfile(): copy the module's default.json")
	}
}
