// Package clientreport is the report `mcpsandbox client` writes (schema
// mcpsandbox.client-report/v1): the verdict, why, and what each leg
// observed, in JSON, text and JUnit. It holds no judgement: the verdict is
// ci/clientverdict's, over what sandbox/clientrun's legs observed.
package clientreport
