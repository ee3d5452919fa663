// Package verdict owns a report's verdict. Finish derives the findings
// from what the report observed (calls, phases, tools, sandbox): the
// rules, contract drift and the baseline, then the policy over all of
// them, then fingerprints, order and summary. Fails says whether they fail
// the CI gate. Nothing else in mcpsandbox writes findings.
package verdict
