package rules

import (
	"strings"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// Rule ids.
const (
	ReadonlyWrites            = "readonly-writes"
	ReadonlyBackground        = "readonly-background"
	NondestructiveDeletes     = "nondestructive-deletes"
	IdempotentRepeats         = "idempotent-repeats"
	ClosedWorldNetwork        = "closed-world-network"
	WritesOutsideWorkspace    = "writes-outside-workspace"
	SecretExfiltration        = "secret-exfiltration"
	SchemaViolationAccepted   = "schema-violation-accepted"
	SchemaViolationEffects    = "schema-violation-effects"
	ContractToolAdded         = "contract-tool-added"
	ContractToolRemoved       = "contract-tool-removed"
	ContractSchemaChanged     = "contract-schema-changed"
	ContractAnnotationChanged = "contract-annotation-changed"
	EventsDropped             = "events-dropped"
	CaptureTruncated          = "capture-truncated"
	BaselineStale             = "baseline-stale"
)

// Rule is one check.
type Rule struct {
	ID string
	// Severity is the rule's default; a policy may change it.
	Severity report.Severity
	// Hint is the annotation the rule holds a tool to ("" for none).
	Hint string
	// Rationale quotes the specification.
	Rationale string
	// Message, for the rules on calls, says what the call did: a format of
	// the call number and the evidence count, after the tool's name.
	Message string
	// ServerMessage, for the rules that raise server-level findings from
	// their evidence (no tool, no call), says what the server did: a
	// format of the places the evidence names and its count.
	ServerMessage string
}

// The specification's words for each hint (MCP, ToolAnnotations).
const (
	specReadOnly    = `readOnlyHint: "If true, the tool does not modify its environment."`
	specDestructive = `destructiveHint: "If true, the tool may perform destructive updates to its environment. If false, the tool performs only additive updates."`
	specIdempotent  = `idempotentHint: "If true, calling the tool repeatedly with the same arguments will have no additional effect on its environment."`
	specOpenWorld   = `openWorldHint: "If true, this tool may interact with an 'open world' of external entities. If false, the tool's domain of interaction is closed."`
)

// All lists every rule, in a stable order.
func All() []Rule {
	all := []Rule{
		{ID: ReadonlyWrites, Severity: report.SeverityError, Hint: "readOnlyHint", Rationale: specReadOnly,
			Message: "declares readOnlyHint: true, but call %d changed %d file(s)"},
		{ID: ReadonlyBackground, Severity: report.SeverityWarning, Hint: "readOnlyHint", Rationale: specReadOnly + " A process left running after the call can modify it later.",
			Message: "declares readOnlyHint: true, but call %d left %d process(es) running"},
		{ID: NondestructiveDeletes, Severity: report.SeverityError, Hint: "destructiveHint", Rationale: specDestructive,
			Message: "declares destructiveHint: false, but call %d deleted or overwrote %d existing file(s)"},
		{ID: IdempotentRepeats, Severity: report.SeverityError, Hint: "idempotentHint", Rationale: specIdempotent,
			Message: "declares idempotentHint: true, but repeating call %d's arguments changed %d more file(s)"},
		{ID: ClosedWorldNetwork, Severity: report.SeverityError, Hint: "openWorldHint", Rationale: specOpenWorld,
			Message: "declares openWorldHint: false, but call %d made %d network attempt(s) beyond the sandbox"},
		{ID: WritesOutsideWorkspace, Severity: report.SeverityWarning, Rationale: "Whatever its hints, a tool that changes files outside the workspace reaches beyond what it was given.",
			Message: "call %d changed %d file(s) outside the workspace"},
		{ID: SecretExfiltration, Severity: report.SeverityCritical, Rationale: "A honeytoken planted for this run left the sandbox in a network payload, DNS name or HTTP request.",
			Message: "call %d sent %d planted secret(s) out of the sandbox", ServerMessage: "the server, " + outsideCalls + " (%s), sent %d planted secret(s) out of the sandbox"},
		{ID: SchemaViolationAccepted, Severity: report.SeverityWarning, Rationale: "The tool accepted input its own inputSchema forbids.",
			Message: "call %d accepted input that breaks its own input schema (%d evidence items: the rule broken, the arguments)"},
		{ID: SchemaViolationEffects, Severity: report.SeverityError, Rationale: "Input its own inputSchema forbids made the tool change something.",
			Message: "call %d: input that breaks its own input schema changed things (%d evidence items)"},
		{ID: ContractToolAdded, Severity: report.SeverityWarning, Rationale: "The server lists a tool the contract does not have."},
		{ID: ContractToolRemoved, Severity: report.SeverityWarning, Rationale: "The contract has a tool the server no longer lists."},
		{ID: ContractSchemaChanged, Severity: report.SeverityWarning, Rationale: "A tool's inputSchema differs from the contract."},
		{ID: ContractAnnotationChanged, Severity: report.SeverityError, Rationale: "A tool's annotations differ from the contract; a flipped safety hint changes what clients let it do unasked."},
		{ID: EventsDropped, Severity: report.SeverityError, Rationale: "The agent dropped events over its bound (a flood): what the server did afterwards is not fully recorded, so no verdict can clear it."},
		{ID: CaptureTruncated, Severity: report.SeverityError, Rationale: "The agent cut what it captured at one of its bounds (an argv, a call's payload, a query's questions, a program too large to hash, or whose file changed or could not be read before its hash): what went past it was not looked at, so no verdict can clear it."},
		{ID: BaselineStale, Severity: report.SeverityError, Rationale: "A baseline entry no longer occurs: the problem is fixed, so the exception must go."},
		serverRunsAsRootRule(),
		agentTamperRule(),
		ambiguousMessageRule(),
		hashBudgetRule(),
		toolListRule(),
		diskRule(),
		lingerRule(),
		journalRule(),
		reportBoundRule(),
		coverageRule(),
		secretDisclosedRule(),
		readHasEffectsRule(),
		surfaceListRule(),
	}
	return append(append(append(append(all, phaseRules()...), toolListRules()...), boundaryRules()...), installRules()...)
}

// ByID returns the rule with id.
func ByID(id string) (Rule, bool) {
	for _, r := range All() {
		if r.ID == id {
			return r, true
		}
	}
	return Rule{}, false
}

// DefaultSeverity is the severity rule id raises findings at (0 for an
// unknown rule).
func DefaultSeverity(id string) report.Severity {
	r, _ := ByID(id)
	return r.Severity
}

// Brief is f's message without the rule's rationale at its end, for the
// formats that quote the rationale once per rule rather than once per
// finding; the message as it is when it does not end with it.
func Brief(f report.Finding) string {
	rl, ok := ByID(f.Rule)
	if !ok || rl.Rationale == "" || !strings.HasSuffix(f.Message, rl.Rationale) || len(f.Message) == len(rl.Rationale) {
		return f.Message
	}
	m := strings.TrimSuffix(f.Message, rl.Rationale)
	for _, sep := range []string{"; the specification: ", "; ", ". "} {
		if strings.HasSuffix(m, sep) {
			return strings.TrimSuffix(m, sep)
		}
	}
	return f.Message
}
