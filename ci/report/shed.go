package report

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// ShedStep is one kind of content a report too large for --max-report
// sheds, all at once, in the order of ShedOrder: first what no rule
// reads, last the effects the findings were judged on.
type ShedStep int

const (
	// ShedResults drops the calls' result texts; resultBytes and
	// resultSha256 say what each result was, also for those kept whole.
	ShedResults ShedStep = iota + 1
	// ShedArguments replaces each call's arguments, when larger than the
	// replacement, by {"$comment": "... N bytes, sha256 ..."}: the same
	// arguments give the same replacement, so repeats still match.
	ShedArguments
	// ShedTexts cuts what only people read: the calls' error texts, the
	// problems' messages, the tools' descriptions and titles, the
	// server's instructions, stderr tail and stdout noise sample.
	ShedTexts
	// ShedEffects empties the effect lists of every call and phase
	// (files counted in filesOmitted): the last resort. The findings,
	// judged on the whole effects before, are kept as they were.
	ShedEffects
)

// ShedOrder is the order in which a report sheds.
func ShedOrder() []ShedStep { return []ShedStep{ShedResults, ShedArguments, ShedTexts, ShedEffects} }

func (s ShedStep) String() string {
	switch s {
	case ShedResults:
		return "call results"
	case ShedArguments:
		return "call arguments"
	case ShedTexts:
		return "texts (errors, problem messages, tool descriptions and titles, instructions, stderr tail, stdout noise sample)"
	case ShedEffects:
		return "effect lists"
	}
	return fmt.Sprintf("ShedStep(%d)", int(s))
}

// shedTextMax is what ShedTexts keeps of a text, in bytes.
const shedTextMax = 160

// Shed drops what step names from r and returns how many items it
// changed (0: nothing was left to shed).
func (r *Report) Shed(step ShedStep) int {
	n := 0
	switch step {
	case ShedResults:
		for i := range r.Calls {
			c := &r.Calls[i]
			if c.Result == "" {
				continue
			}
			if c.ResultBytes == 0 {
				c.ResultBytes, c.ResultSha256 = c.WholeBytes, c.WholeSha256
			}
			c.Result = ""
			n++
		}
		for i := range r.Reads {
			if rd := &r.Reads[i]; rd.Result != "" {
				if rd.ResultBytes == 0 {
					rd.ResultBytes, rd.ResultSha256 = rd.WholeBytes, rd.WholeSha256
				}
				rd.Result = ""
				n++
			}
		}
	case ShedArguments:
		for i := range r.Calls {
			c := &r.Calls[i]
			if repl := shedArguments(c.Arguments); len(repl) < len(c.Arguments) {
				c.Arguments = repl
				n++
			}
		}
	case ShedTexts:
		cut := func(s *string) {
			if c := cutText(*s, shedTextMax); c != *s {
				*s = c
				n++
			}
		}
		for i := range r.Calls {
			cut(&r.Calls[i].Error)
		}
		for i := range r.Reads {
			cut(&r.Reads[i].Error)
		}
		for i := range r.Problems {
			cut(&r.Problems[i].Message)
		}
		for i := range r.Tools {
			cut(&r.Tools[i].Description)
			cut(&r.Tools[i].Title)
		}
		cut(&r.Server.Instructions)
		cut(&r.Server.StderrTail)
		for i := range r.Server.StdoutNoiseSample {
			cut(&r.Server.StdoutNoiseSample[i])
		}
	case ShedEffects:
		for i := range r.Calls {
			n += shedEffects(&r.Calls[i].Effects)
		}
		for i := range r.Phases {
			n += shedEffects(&r.Phases[i].Effects)
		}
		for i := range r.Reads {
			n += shedEffects(&r.Reads[i].Effects)
		}
	}
	return n
}

// shedArguments is the stand-in for arguments shed over the report bound.
func shedArguments(args json.RawMessage) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"$comment": fmt.Sprintf("mcpsandbox: the arguments (%d bytes, sha256 %x) were shed over the report bound (--max-report)", len(args), sha256.Sum256(args))})
	return b
}

// shedEffects empties e's lists, counting the files in FilesOmitted, and
// returns how many entries went.
func shedEffects(e *Effects) int {
	n := len(e.Files) + len(e.Processes) + len(e.Network)
	e.FilesOmitted += len(e.Files)
	e.Files, e.Processes, e.Network = []FileChange{}, []Process{}, []NetEvent{}
	return n
}

// cutText keeps at most max bytes of s, whole characters and a note of
// how long it was; what it returns is cut no more.
func cutText(s string, bound int) string {
	if len(s) <= bound {
		return s
	}
	note := fmt.Sprintf("… (%d bytes, cut over the report bound)", len(s))
	end := max(0, bound-len(note))
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + note
}

// JSONSize is the size of r as WriteJSON writes it, leaving out Timing:
// what differs between runs must not decide what is shed.
func JSONSize(r *Report) (int64, error) {
	t := r.Timing
	r.Timing = nil
	defer func() { r.Timing = t }()
	// WriteJSON's encoding, counted rather than kept.
	var c counter
	enc := json.NewEncoder(&c)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	err := enc.Encode(r)
	return int64(c), err
}

type counter int64

func (c *counter) Write(p []byte) (int, error) { *c += counter(len(p)); return len(p), nil }
