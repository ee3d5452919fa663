//go:build !linux

package sandbox

func startAllowForward(d *netnsDialer, plan allowPlan, dial DialFunc, max int) (*allowForward, error) {
	return nil, &InfraError{Cause: "--allow-host needs Linux (the runner listens in the container's network namespace)"}
}
