// Package k8stest checks the Job that k8sjob prints against the official
// Kubernetes API types: decoded strictly (an unknown or misplaced field
// fails), then read as the kubelet and the Job controller would.
package k8stest
