package sandbox

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
)

// mobyDefault is the engine's own default profile, moby's default.json
// (see moby-seccomp/README.md).
//
//go:embed moby-seccomp/default.json
var mobyDefault []byte

// Linux's numbers, whatever the host the runner runs on: the socket
// domains a server may create (include/linux/socket.h) and the errnos of
// a refusal.
const (
	afUnix    = 1
	afInet    = 2
	afInet6   = 10
	afNetlink = 16

	errnoEPERM        = 1
	errnoENOSYS       = 38
	errnoEAFNOSUPPORT = 97
)

// socketDomains are the domains socket(2) may create in a sandbox: local
// sockets, IPv4, IPv6, and netlink (which libc and language runtimes use
// to list interfaces and addresses). Every other family (vsock, packet,
// bluetooth, alg, ...) reaches into the host's kernel or hardware and no
// MCP server needs it.
func socketDomains() []uint64 { return []uint64{afUnix, afInet, afInet6, afNetlink} }

// lowWord is the mask of a syscall argument's low 32 bits: socket(2) takes
// an int, so the kernel sees only these, whatever the upper bits hold.
const lowWord = 0xffffffff

// seccompProfile returns the seccomp profile every sandbox runs under,
// with or without the agent, as the JSON the engine takes in SecurityOpt
// ("seccomp=" + JSON). The engine replaces its default with the profile
// given, so this is a whole one: moby's default, with three changes.
//
//   - socket(2) creates only socketDomains; every other domain fails with
//     EAFNOSUPPORT, as on a kernel built without the family. The domain is
//     compared on its low 32 bits (SCMP_CMP_MASKED_EQ), the ones the kernel
//     reads, so that a domain with upper bits set is judged as the kernel
//     will take it (0x100000028 is AF_VSOCK, and is refused).
//   - socketcall(2) fails with ENOSYS: its arguments are behind a pointer,
//     out of a filter's sight, so it would let a 32-bit x86 program create
//     any socket. (The agent refuses 32-bit syscalls altogether.)
//   - io_uring_setup, io_uring_enter and io_uring_register fail with
//     ENOSYS, as under the agent: a ring can connect and send with no
//     syscall a filter sees.
//
// How the refusal is written matters. libseccomp (2.5.4 under runc 1.1.5
// here) lets a rule without conditions win over every rule with
// conditions for the same syscall, whatever their order: an unconditional
// EAFNOSUPPORT rule beside the four allow rules refused AF_UNIX too. Rules
// whose conditions overlap are resolved in libseccomp's own order, not
// ours: a refusal whose condition matched every domain (mask 0) also won
// over the allows. So the refusals are conditions that never overlap the
// allowed domains: the rest of the 2^32 low-word values, as masked
// prefixes (refusedDomains). Each domain matches exactly one socket rule.
//
// Only fields that engine 20.10 (API 1.41) reads are sent: it silently
// ignores the others. It ignores defaultErrnoRet (tried: a default of
// ENOSYS still gave EPERM), so that field is checked to be EPERM, what the
// engine gives anyway, and left out.
func seccompProfile(traced bool) (string, error) {
	var p profile
	dec := json.NewDecoder(bytes.NewReader(mobyDefault))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return "", fmt.Errorf("reading moby's default seccomp profile: %w", err)
	}
	if p.DefaultAction != "SCMP_ACT_ERRNO" || p.DefaultErrnoRet == nil || *p.DefaultErrnoRet != errnoEPERM {
		return "", fmt.Errorf("moby's default seccomp profile: default %s (errno %v), want SCMP_ACT_ERRNO with EPERM", p.DefaultAction, p.DefaultErrnoRet)
	}
	p.DefaultErrnoRet = nil
	replaced := []string{"socket", "socketcall", "io_uring_setup", "io_uring_enter", "io_uring_register"}
	kept := p.Syscalls[:0]
	for _, r := range p.Syscalls {
		if slices.Contains(replaced, r.Name) {
			r.Name = ""
		}
		r.Names = slices.DeleteFunc(r.Names, func(n string) bool { return slices.Contains(replaced, n) })
		if r.Name != "" || len(r.Names) > 0 {
			kept = append(kept, r)
		}
	}
	p.Syscalls = kept
	// Before the socket rules: on 32-bit x86, libseccomp also turns each
	// socket rule into a socketcall(SYS_SOCKET) rule without the domain
	// (out of its sight), so the allow and refuse rules collide there
	// (runc: "error adding seccomp rule for syscall socket: file exists")
	// unless socketcall already has a rule without conditions, which they
	// then leave as it is.
	p.Syscalls = append(p.Syscalls, rule{Names: []string{"socketcall", "io_uring_setup", "io_uring_enter", "io_uring_register"},
		Action: "SCMP_ACT_ERRNO", ErrnoRet: errno(errnoENOSYS)})
	for _, d := range socketDomains() {
		p.Syscalls = append(p.Syscalls, rule{Names: []string{"socket"}, Action: "SCMP_ACT_ALLOW",
			Args: []arg{{Index: 0, Value: lowWord, ValueTwo: d, Op: "SCMP_CMP_MASKED_EQ"}}})
	}
	refuse := "SCMP_ACT_ERRNO"
	if traced {
		refuse = "SCMP_ACT_TRACE"
	}
	for _, m := range refusedDomains(socketDomains()) {
		p.Syscalls = append(p.Syscalls, rule{Names: []string{"socket"}, Action: refuse, ErrnoRet: errno(errnoEAFNOSUPPORT),
			Args: []arg{{Index: 0, Value: m.mask, ValueTwo: m.value, Op: "SCMP_CMP_MASKED_EQ"}}})
	}
	b, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("encoding the seccomp profile: %w", err)
	}
	return string(b), nil
}

// masked is a set of 32-bit values: those v with v&mask == value.
type masked struct{ mask, value uint64 }

// refusedDomains covers the 32-bit values other than allowed with
// disjoint masked prefixes: a binary trie over the bits, high to low,
// whose subtrees that hold no allowed value are taken whole.
func refusedDomains(allowed []uint64) []masked {
	var out []masked
	var walk func(value uint64, bits int)
	walk = func(value uint64, bits int) { // the values whose top bits equal value's
		size := uint64(1) << (32 - bits)
		hit := slices.ContainsFunc(allowed, func(a uint64) bool { return a >= value && a < value+size })
		switch {
		case !hit:
			out = append(out, masked{mask: lowWord &^ (size - 1), value: value})
		case bits < 32:
			walk(value, bits+1)
			walk(value|size>>1, bits+1)
		}
	}
	walk(0, 0)
	return out
}

func errno(e uint) *uint { return &e }

// profile is a seccomp profile as engine 20.10 reads it (its
// profiles/seccomp types, errnoRet included since 20.10.10); defaultErrnoRet
// is read from moby's file and never sent.
type profile struct {
	DefaultAction   string   `json:"defaultAction"`
	DefaultErrnoRet *uint    `json:"defaultErrnoRet,omitempty"`
	Architectures   []string `json:"architectures,omitempty"`
	ArchMap         []struct {
		Architecture     string   `json:"architecture"`
		SubArchitectures []string `json:"subArchitectures"`
	} `json:"archMap,omitempty"`
	Syscalls []rule `json:"syscalls"`
}

type rule struct {
	Name     string   `json:"name,omitempty"`
	Names    []string `json:"names,omitempty"`
	Action   string   `json:"action"`
	ErrnoRet *uint    `json:"errnoRet,omitempty"`
	Args     []arg    `json:"args,omitempty"`
	Comment  string   `json:"comment,omitempty"`
	Includes *filter  `json:"includes,omitempty"`
	Excludes *filter  `json:"excludes,omitempty"`
}

// arg compares syscall argument Index; for SCMP_CMP_MASKED_EQ, Value is
// the mask and ValueTwo the value.
type arg struct {
	Index    uint   `json:"index"`
	Value    uint64 `json:"value"`
	ValueTwo uint64 `json:"valueTwo"`
	Op       string `json:"op"`
}

type filter struct {
	Caps      []string `json:"caps,omitempty"`
	Arches    []string `json:"arches,omitempty"`
	MinKernel string   `json:"minKernel,omitempty"`
}
