// Package formats writes a report in the formats CI systems read: JSON
// (canonical), text, Markdown (for $GITHUB_STEP_SUMMARY), SARIF 2.1.0 and
// JUnit XML.
package formats
