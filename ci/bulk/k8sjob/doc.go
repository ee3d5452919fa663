// Package k8sjob prints the Kubernetes Indexed Job that spreads a bulk
// list over a cluster: one pod per shard, in which the tool runs next to a
// privileged Docker-in-Docker sidecar (Kubernetes nodes run containerd,
// not Docker), the two sharing the engine's data root so that the runner
// reads the sandboxes' upper layers as it does on a Docker host.
package k8sjob
