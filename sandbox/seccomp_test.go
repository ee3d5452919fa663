package sandbox

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"
)

func decodeProfile(t *testing.T) profile {
	t.Helper()
	js, err := seccompProfile(false)
	if err != nil {
		t.Fatal(err)
	}
	var p profile
	if err := json.Unmarshal([]byte(js), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// matches reports whether socket(domain) meets every condition of r (a
// rule's conditions are ANDed).
func matches(r rule, domain uint64) bool {
	for _, a := range r.Args {
		if a.Index != 0 || a.Op != "SCMP_CMP_MASKED_EQ" {
			return false
		}
		if domain&a.Value != a.ValueTwo {
			return false
		}
	}
	return true
}

// TestSocketDomainsMatchOneRuleEach: every domain, upper bits or not,
// meets exactly one socket rule, so that libseccomp has no overlap to
// resolve; the four domains a server needs are allowed, judged on the low
// 32 bits as the kernel reads them, and everything else is EAFNOSUPPORT.
func TestSocketDomainsMatchOneRuleEach(t *testing.T) {
	p := decodeProfile(t)
	var sock []rule
	for _, r := range p.Syscalls {
		if slices.Contains(r.Names, "socket") || r.Name == "socket" {
			if len(r.Names) != 1 || len(r.Args) != 1 {
				t.Fatalf("socket rule %+v: want socket alone, with one condition", r)
			}
			sock = append(sock, r)
		}
	}
	domains := []uint64{0, 1, 2, 3, 10, 16, 17, 31, 38, 40, 45, 46, 255, 1 << 31, lowWord, 1<<32 | 40, 1<<32 | 1, 1<<63 | 16, ^uint64(0)}
	for d := uint64(0); d < 1024; d++ {
		domains = append(domains, d, d|0xdead<<32)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		domains = append(domains, r.Uint64(), r.Uint64()&lowWord)
	}
	for _, d := range domains {
		var hit []rule
		for _, r := range sock {
			if matches(r, d) {
				hit = append(hit, r)
			}
		}
		if len(hit) != 1 {
			t.Fatalf("socket(%#x) meets %d rules, want 1", d, len(hit))
		}
		allowed := slices.Contains(socketDomains(), d&lowWord)
		switch {
		case allowed && hit[0].Action != "SCMP_ACT_ALLOW":
			t.Errorf("socket(%#x): %s, want allowed", d, hit[0].Action)
		case !allowed && (hit[0].Action != "SCMP_ACT_ERRNO" || hit[0].ErrnoRet == nil || *hit[0].ErrnoRet != errnoEAFNOSUPPORT):
			t.Errorf("socket(%#x): %s %v, want EAFNOSUPPORT", d, hit[0].Action, hit[0].ErrnoRet)
		}
	}
	t.Logf("%d socket rules", len(sock))
}

// TestSeccompProfileIsMobysWithThreeChanges: every other rule of moby's
// default is kept as it was; socketcall and io_uring fail with ENOSYS.
func TestSeccompProfileIsMobysWithThreeChanges(t *testing.T) {
	var moby profile
	if err := json.Unmarshal(mobyDefault, &moby); err != nil {
		t.Fatal(err)
	}
	p := decodeProfile(t)
	replaced := []string{"socket", "socketcall", "io_uring_setup", "io_uring_enter", "io_uring_register"}
	key := func(r rule) string {
		r.Names = slices.DeleteFunc(slices.Clone(r.Names), func(n string) bool { return slices.Contains(replaced, n) })
		b, _ := json.Marshal(r)
		return string(b)
	}
	var want, got []string
	for _, r := range moby.Syscalls {
		if len(r.Names) == 1 && slices.Contains(replaced, r.Names[0]) {
			continue
		}
		want = append(want, key(r))
	}
	enosys := 0
	for _, r := range p.Syscalls {
		switch {
		case slices.Contains(r.Names, "socket"):
		case slices.Equal(r.Names, []string{"socketcall", "io_uring_setup", "io_uring_enter", "io_uring_register"}):
			if r.Action != "SCMP_ACT_ERRNO" || *r.ErrnoRet != errnoENOSYS || len(r.Args) != 0 || r.Includes != nil || r.Excludes != nil {
				t.Errorf("socketcall and io_uring: %+v, want ENOSYS always", r)
			}
			enosys++
		default:
			for _, n := range replaced {
				if slices.Contains(r.Names, n) {
					t.Errorf("rule %+v still names %s", r, n)
				}
			}
			got = append(got, key(r))
		}
	}
	if enosys != 1 || !slices.Equal(got, want) {
		t.Errorf("the profile changes more of moby's rules than socket, socketcall and io_uring (%d ENOSYS rules)", enosys)
	}
	if p.DefaultAction != moby.DefaultAction || len(p.ArchMap) != len(moby.ArchMap) {
		t.Errorf("default %s, %d arches; moby's %s, %d", p.DefaultAction, len(p.ArchMap), moby.DefaultAction, len(moby.ArchMap))
	}
}

// TestSeccompProfileHasOnlyWhatEngine2010Reads: engine 20.10 decodes the
// profile loosely and drops what it does not know (defaultErrnoRet, tried:
// ignored), so nothing else may be sent.
func TestSeccompProfileHasOnlyWhatEngine2010Reads(t *testing.T) {
	js, err := seccompProfile(false)
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Top      map[string]json.RawMessage
		Syscalls []map[string]json.RawMessage `json:"syscalls"`
	}
	if err := json.Unmarshal([]byte(js), &raw.Top); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(js), &raw); err != nil {
		t.Fatal(err)
	}
	known := func(what string, m map[string]json.RawMessage, fields ...string) {
		for k := range m {
			if !slices.Contains(fields, k) {
				t.Errorf("%s field %q is not one engine 20.10 reads", what, k)
			}
		}
	}
	known("profile", raw.Top, "defaultAction", "architectures", "archMap", "syscalls")
	for _, r := range raw.Syscalls {
		known("syscall", r, "name", "names", "action", "errnoRet", "args", "comment", "includes", "excludes")
		for _, f := range []string{"includes", "excludes"} {
			var m map[string]json.RawMessage
			if r[f] != nil {
				json.Unmarshal(r[f], &m)
			}
			known(f, m, "caps", "arches", "minKernel")
		}
		var args []map[string]json.RawMessage
		json.Unmarshal(r["args"], &args)
		for _, a := range args {
			known("arg", a, "index", "value", "valueTwo", "op")
		}
	}
}

func TestRefusedDomainsCoverTheRest(t *testing.T) {
	blocks := refusedDomains(socketDomains())
	var n uint64
	for _, b := range blocks {
		n += (lowWord &^ b.mask) + 1
	}
	if n != 1<<32-4 {
		t.Errorf("the blocks cover %d values, want 2^32-4", n)
	}
	if len(blocks) != 37 {
		t.Errorf("%d blocks, want the 37 of a trie over 32 bits with 4 leaves out", len(blocks))
	}
}
