package report

import (
	"encoding/json"
	"regexp"
	"strings"
)

// FailsBy says how a result that did not set isError says it failed
// anyway: the one classification coverage, retries and every output
// use (see Succeeded). Servers do this often: a handler that catches its
// error and returns it as text, a CallToolResult serialized into a text
// item, {"success": false}. A tool whose every call fails this way did
// not run the code its hints describe, so it is not exercised.
const (
	// FailsByNestedIsError: the result's text (or structured content) is
	// a serialized tool result with isError true.
	FailsByNestedIsError = "nested-iserror"
	// FailsBySuccessFalse: the text or structured content is a JSON object
	// with success (or ok) false, or status "error" or "failed".
	FailsBySuccessFalse = "success-false"
	// FailsByErrorField: a JSON object of a few members whose error member
	// is set, with no success true.
	FailsByErrorField = "error-field"
	// FailsByErrorText: the whole text is one short error message, by the
	// patterns of errorTextRE.
	FailsByErrorText = "error-text"
)

// maxErrorText bounds the text read as an error message: a long text
// that begins with "Error:" is more likely content (a log, a file).
const maxErrorText = 1024

// maxErrorFieldMembers bounds the members of an object read by its error
// member: a record with many fields and an error among them is data.
const maxErrorFieldMembers = 4

// errorTextRE are the error messages servers send as a result's text
// without isError: "Error: ...", "ERROR ...", "Error executing tool ...",
// "Failed to ...", the TypeScript SDK's "MCP error -32602: ...".
var errorTextRE = regexp.MustCompile(`^(?:(?:Error|ERROR|error)(?::|\s+(?:executing|calling|running|in|while|during)\b)|Failed to\b|MCP error -?\d+:|Exception:|Traceback \(most recent call last\):)`)

// ResultFailure classifies a result that did not set isError: "" when
// nothing in it says it failed, else one of the FailsBy values. text is
// the result's text content as the report keeps it; structured is its
// structured content (nil for none).
func ResultFailure(text string, structured any) string {
	if structured != nil {
		if m, ok := structured.(map[string]any); ok {
			if why := objectFailure(m); why != "" {
				return why
			}
		}
	}
	t := strings.TrimSpace(text)
	if strings.HasPrefix(t, "{") {
		var m map[string]any
		if json.Unmarshal([]byte(t), &m) == nil {
			return objectFailure(m)
		}
	}
	if len(t) <= maxErrorText && !strings.Contains(t, "\n\n") && errorTextRE.MatchString(t) {
		return FailsByErrorText
	}
	return ""
}

// objectFailure reads a JSON object result.
func objectFailure(m map[string]any) string {
	if v, ok := m["isError"].(bool); ok && v {
		if _, hasContent := m["content"]; hasContent || len(m) <= maxErrorFieldMembers {
			return FailsByNestedIsError
		}
	}
	for _, k := range []string{"success", "ok"} {
		if v, ok := m[k].(bool); ok {
			if !v {
				return FailsBySuccessFalse
			}
			return "" // success: true says it worked, whatever else it holds
		}
	}
	if s, ok := m["status"].(string); ok && (strings.EqualFold(s, "error") || strings.EqualFold(s, "failed") || strings.EqualFold(s, "failure")) {
		return FailsBySuccessFalse
	}
	if len(m) <= maxErrorFieldMembers {
		switch e := m["error"].(type) {
		case string:
			if strings.TrimSpace(e) != "" {
				return FailsByErrorField
			}
		case map[string]any:
			if len(e) > 0 {
				return FailsByErrorField
			}
		}
	}
	return ""
}
