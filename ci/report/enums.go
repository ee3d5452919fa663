package report

import (
	"fmt"
	"strings"
)

// Severity orders findings: note < warning < error < critical. The zero
// value is no severity: it has no name and does not marshal.
type Severity int

// Severities, least severe first.
const (
	SeverityNote Severity = iota + 1
	SeverityWarning
	SeverityError
	SeverityCritical
)

// Severities lists every severity, most severe first.
func Severities() []Severity {
	return []Severity{SeverityCritical, SeverityError, SeverityWarning, SeverityNote}
}

// String is the severity's name in reports, policies and flags.
func (s Severity) String() string {
	switch s {
	case SeverityNote:
		return "note"
	case SeverityWarning:
		return "warning"
	case SeverityError:
		return "error"
	case SeverityCritical:
		return "critical"
	}
	return fmt.Sprintf("Severity(%d)", int(s))
}

func (s Severity) valid() bool { return s >= SeverityNote && s <= SeverityCritical }

// ParseSeverity reads a severity's name.
func ParseSeverity(name string) (Severity, error) {
	for _, s := range Severities() {
		if s.String() == name {
			return s, nil
		}
	}
	return 0, fmt.Errorf("unknown severity %q (want %s)", name, names(Severities()))
}

// MarshalText keeps the JSON a name.
func (s Severity) MarshalText() ([]byte, error) {
	if !s.valid() {
		return nil, fmt.Errorf("marshalling %s: no such severity", s)
	}
	return []byte(s.String()), nil
}

// UnmarshalText reads a name.
func (s *Severity) UnmarshalText(b []byte) error {
	v, err := ParseSeverity(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// ChangeKind says what happened to a path. The zero value is no change:
// it has no name and does not marshal.
type ChangeKind int

// Change kinds.
const (
	ChangeCreated ChangeKind = iota + 1
	ChangeModified
	ChangeDeleted
)

// ChangeKinds lists every change kind.
func ChangeKinds() []ChangeKind { return []ChangeKind{ChangeCreated, ChangeModified, ChangeDeleted} }

// String is the change's name in reports.
func (k ChangeKind) String() string {
	switch k {
	case ChangeCreated:
		return "created"
	case ChangeModified:
		return "modified"
	case ChangeDeleted:
		return "deleted"
	}
	return fmt.Sprintf("ChangeKind(%d)", int(k))
}

func (k ChangeKind) valid() bool { return k >= ChangeCreated && k <= ChangeDeleted }

// ParseChangeKind reads a change kind's name.
func ParseChangeKind(name string) (ChangeKind, error) {
	for _, k := range ChangeKinds() {
		if k.String() == name {
			return k, nil
		}
	}
	return 0, fmt.Errorf("unknown change kind %q (want %s)", name, names(ChangeKinds()))
}

// MarshalText keeps the JSON a name.
func (k ChangeKind) MarshalText() ([]byte, error) {
	if !k.valid() {
		return nil, fmt.Errorf("marshalling %s: no such change kind", k)
	}
	return []byte(k.String()), nil
}

// UnmarshalText reads a name.
func (k *ChangeKind) UnmarshalText(b []byte) error {
	v, err := ParseChangeKind(string(b))
	if err != nil {
		return err
	}
	*k = v
	return nil
}

// names joins the names of values for error messages and schemas.
func names[T fmt.Stringer](vs []T) string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.String()
	}
	return strings.Join(out, ", ")
}
