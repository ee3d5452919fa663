// Package clientrun runs `mcpsandbox client`: an MCP client, in the
// hardened sandbox, against the twin server (sandbox/twin) and the
// scripted model, one leg per client run (alpha, beta, and the positive
// control), each in a fresh container. It gathers what the ledger and the
// file effects show into the client report (ci/report/clientreport) and
// asks the Judge it is given (ci/clientverdict) what they mean: it
// observes, it does not judge. Where the twin found that a client's
// message reads two ways (the ledger's ambiguities), the leg says so
// (legs[].ambiguities, observed.ambiguous) and the report carries an
// ambiguous-message finding; the verdict is then ERRORED.
package clientrun
