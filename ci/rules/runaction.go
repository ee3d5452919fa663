package rules

import (
	"fmt"
	"slices"
	"strings"
)

// Action is what `mcpsandbox run` does, at the boundary between a client
// and the server, about a rule's findings on a tool.
type Action int

const (
	// ActionLog only logs the finding.
	ActionLog Action = iota + 1
	// ActionCorrect rewrites the contradicted hint toward the safe side
	// in what the client lists (with --hints verified).
	ActionCorrect
	// ActionDeny corrects the hint and refuses the tool's later calls
	// with a JSON-RPC error naming the rule.
	ActionDeny
)

var actionNames = []string{ActionLog: "log", ActionCorrect: "correct", ActionDeny: "deny"}

func (a Action) String() string {
	if a <= 0 || int(a) >= len(actionNames) {
		return fmt.Sprintf("Action(%d)", int(a))
	}
	return actionNames[a]
}

// ParseAction reads log, correct or deny.
func ParseAction(s string) (Action, error) {
	if i := slices.Index(actionNames, s); i > 0 {
		return Action(i), nil
	}
	return 0, fmt.Errorf("action %q: want %s", s, strings.Join(actionNames[1:], ", "))
}

// MarshalText writes the action as a policy file does.
func (a Action) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText reads an action from a policy file.
func (a *Action) UnmarshalText(b []byte) error {
	v, err := ParseAction(string(b))
	if err != nil {
		return err
	}
	*a = v
	return nil
}

// RunPolicy is the policy's section for `mcpsandbox run`: an action per
// rule id and per tool (globs, as in ignores). A tool's action wins over
// its rule's; neither set leaves the default to run (--hints).
type RunPolicy struct {
	Rules map[string]Action `json:"rules,omitempty" yaml:"rules"`
	Tools map[string]Action `json:"tools,omitempty" yaml:"tools"`
	// DenyServerAfter (deny-server-after) is how many times the server
	// may break a hint whose rule says deny before every tool that
	// claims it, under any name, is refused (0: DefaultDenyServerAfter).
	// A stretch of the session (a call, a phase) counts once.
	DenyServerAfter int `json:"denyServerAfter,omitempty" yaml:"denyServerAfter"`
	// Requests maps a method the server may send the client on its own
	// (globs: "sampling/createMessage", "elicitation/*",
	// "notifications/message") to log (the default) or deny: refused,
	// the client is not asked (the server gets an error) or not told.
	Requests map[string]Action `json:"requests,omitempty" yaml:"requests"`
}

// RequestAction is the action for a message of method the server sends
// the client: the strictest glob's (log when none matches).
func (p RunPolicy) RequestAction(method string) Action {
	best := ActionLog
	for g, a := range p.Requests {
		if glob(g, method) && a > best {
			best = a
		}
	}
	return best
}

// DefaultDenyServerAfter is deny-server-after when the policy sets none:
// one broken claim, and no tool of that server is taken at its word.
const DefaultDenyServerAfter = 1

// Action is the action set for rule's findings on tool, if any: the
// strictest of the tool globs that match it, else the rule's.
func (p RunPolicy) Action(rule, tool string) (Action, bool) {
	var best Action
	for g, a := range p.Tools {
		if glob(g, tool) && a > best {
			best = a
		}
	}
	if best != 0 {
		return best, true
	}
	a, ok := p.Rules[rule]
	return a, ok
}

func (p RunPolicy) check() error {
	for g, a := range p.Requests {
		if a != ActionLog && a != ActionDeny {
			return fmt.Errorf("run: requests %q: %s (want log or deny)", g, a)
		}
	}
	if p.DenyServerAfter < 0 {
		return fmt.Errorf("run: denyServerAfter %d: want 1 or more", p.DenyServerAfter)
	}
	for id, a := range p.Rules {
		if _, ok := ByID(id); !ok {
			return fmt.Errorf("run: unknown rule %q", id)
		}
		if a == 0 {
			return fmt.Errorf("run: rule %s: no action", id)
		}
	}
	for g, a := range p.Tools {
		if _, err := globRegexp(g); err != nil {
			return fmt.Errorf("run: glob %q: %w", g, err)
		}
		if a == 0 {
			return fmt.Errorf("run: tool %s: no action", g)
		}
	}
	return nil
}
