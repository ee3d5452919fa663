package sandbox

// SeccompProfile is the profile a sandbox runs under, for tests that run
// a reference container with the same hardening.
var SeccompProfile = seccompProfile
