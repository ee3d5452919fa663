package k8sjob

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// Paths and names the pod's containers agree on.
const (
	// DockerRoot is the engine's data root, mounted at the same path in the
	// sidecar and in the tool: the runner reads a container's upper layer
	// at the path the Engine API gives, which is the sidecar's.
	DockerRoot = "/var/lib/docker"
	// sockDir holds the sidecar's socket; the tool reaches the engine there.
	sockDir    = "/run/dind"
	dockerHost = "unix://" + sockDir + "/docker.sock"
	// Scratch is the tool's home (so its cache) and temp directory, mounted
	// at the same path in the sidecar: a path the runner gives the engine
	// (a package prefix, a workspace, --mount) must exist for the engine
	// too. An emptyDir starts empty: nothing below it is assumed.
	Scratch = "/scratch"
	// ResultsDir is where the results volume is mounted; each shard writes
	// to its own directory under it, and `bulk merge` joins them.
	ResultsDir = "/results"
	// ListsDir is where the lists config map is mounted.
	ListsDir = "/lists"
	// ShardEnv carries the pod's completion index, read from the annotation
	// the Job controller sets, and expanded by the kubelet in the args.
	ShardEnv = "MCPSANDBOX_SHARD_INDEX"
	// completionIndex is the annotation that holds a pod's index.
	completionIndex = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
)

// Defaults.
const (
	DefaultName      = "mcpsandbox-bulk"
	DefaultDindImage = "docker:27-dind"
	defaultBackoff   = 1
)

// DefaultImages are the runtime images the init container builds in each
// pod's engine before the scans (`images build`): a fresh engine has none,
// and nothing is pulled.
var DefaultImages = []string{"base", "node"}

// ErrInvalid is wrapped by every error of options the Job cannot be made
// from.
var ErrInvalid = errors.New("invalid job options")

// Options say what the Job runs. Image, Shards, ListsConfigMap, Lists and
// ResultsClaim are required.
type Options struct {
	// Name of the Job (DefaultName); Namespace, if set, goes in metadata.
	Name, Namespace string
	// Image is the tool's image: mcpsandbox and what `images build` reads
	// (see the Dockerfile next to this file).
	Image string
	// DindImage is the engine sidecar's image (DefaultDindImage).
	DindImage string
	// Shards is the Job's completions: shard I of Shards runs in the pod
	// whose completion index is I. Parallelism is how many run at once
	// (Shards when zero).
	Shards, Parallelism int
	// ListsConfigMap is the config map holding the lists; Lists are its
	// keys, given to bulk in this order.
	ListsConfigMap string
	Lists          []string
	// ResultsClaim is the persistent volume claim the results go to.
	ResultsClaim string
	// BulkArgs are more flags for `mcpsandbox bulk` (say "-j", "2").
	BulkArgs []string
	// Images are the runtime images built in each pod (DefaultImages).
	Images []string
	// CPU and Memory, if set, are the engine sidecar's requests and
	// limits: the servers run there.
	CPU, Memory string
	// BackoffLimitPerIndex is how often a failed shard is retried (1).
	BackoffLimitPerIndex *int
}

var (
	dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	cmKey    = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)
)

// maxName keeps a pod's hostname (NAME-INDEX) and its generated name
// within the 63 characters of a DNS label.
const maxName = 50

func (o Options) withDefaults() Options {
	if o.Name == "" {
		o.Name = DefaultName
	}
	if o.DindImage == "" {
		o.DindImage = DefaultDindImage
	}
	if o.Parallelism == 0 {
		o.Parallelism = o.Shards
	}
	if len(o.Images) == 0 {
		o.Images = DefaultImages
	}
	if o.BackoffLimitPerIndex == nil {
		b := defaultBackoff
		o.BackoffLimitPerIndex = &b
	}
	return o
}

func (o Options) validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if !dnsLabel.MatchString(o.Name) || len(o.Name) > maxName {
		bad("job name %q: lowercase letters, digits and '-', at most %d characters", o.Name, maxName)
	}
	if o.Namespace != "" && !dnsLabel.MatchString(o.Namespace) {
		bad("namespace %q is not a DNS label", o.Namespace)
	}
	if o.Image == "" {
		bad("no tool image (--image)")
	}
	if o.Shards < 1 {
		bad("shards %d: at least 1", o.Shards)
	}
	if o.Parallelism < 1 || o.Parallelism > o.Shards {
		bad("parallelism %d: between 1 and the shards (%d)", o.Parallelism, o.Shards)
	}
	if !dnsLabel.MatchString(o.ListsConfigMap) {
		bad("lists config map %q is not a DNS label", o.ListsConfigMap)
	}
	if len(o.Lists) == 0 {
		bad("no list: name the config map's keys (--list)")
	}
	for _, l := range o.Lists {
		if !cmKey.MatchString(l) || l == "." || l == ".." {
			bad("list %q is not a config map key", l)
		}
	}
	if !dnsLabel.MatchString(o.ResultsClaim) {
		bad("results claim %q is not a DNS label", o.ResultsClaim)
	}
	if *o.BackoffLimitPerIndex < 0 {
		bad("backoff limit per index %d is negative", *o.BackoffLimitPerIndex)
	}
	for _, a := range o.BulkArgs {
		if strings.Contains(a, "$(") {
			// The kubelet would expand it: a flag must mean what it says.
			bad("bulk argument %q holds $(: the kubelet would expand it", a)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil
}

// ShardArg is the --shard value of a pod: its completion index over the
// shards, expanded by the kubelet from ShardEnv.
func ShardArg(shards int) string { return "$(" + ShardEnv + ")/" + strconv.Itoa(shards) }

// ShardResults is the directory a pod writes its results to.
func ShardResults() string { return ResultsDir + "/shard-$(" + ShardEnv + ")" }

func build(o Options) job {
	labels := map[string]string{
		"app.kubernetes.io/name":      "mcpsandbox",
		"app.kubernetes.io/component": "bulk",
		"app.kubernetes.io/instance":  o.Name,
	}
	str := func(s string) *string { return &s }
	toolEnv := []envVar{
		{Name: "DOCKER_HOST", Value: str(dockerHost)},
		{Name: "HOME", Value: str(Scratch)},
		{Name: "TMPDIR", Value: str(Scratch)},
	}
	shared := []volumeMount{
		{Name: "docker-root", MountPath: DockerRoot},
		{Name: "engine-socket", MountPath: sockDir},
		{Name: "scratch", MountPath: Scratch},
	}
	engine := container{
		Name:  "engine",
		Image: o.DindImage,
		// dockerd with a unix socket only: no TCP port, no TLS to set up.
		Args:          []string{"--host=" + dockerHost},
		Env:           []envVar{{Name: "DOCKER_TLS_CERTDIR", Value: str("")}},
		RestartPolicy: "Always", // a native sidecar: the Job ends when bulk does
		// Privileged: an engine creates namespaces, mounts and cgroups.
		SecurityContext: &securityContext{Privileged: true},
		StartupProbe: &probe{
			Exec:          &execAction{Command: []string{"docker", "--host", dockerHost, "version"}},
			PeriodSeconds: 2, FailureThreshold: 150,
		},
		VolumeMounts: shared,
	}
	if o.CPU != "" || o.Memory != "" {
		r := map[string]string{}
		if o.CPU != "" {
			r["cpu"] = o.CPU
		}
		if o.Memory != "" {
			r["memory"] = o.Memory
		}
		engine.Resources = &resourceRequirement{Requests: r, Limits: r}
	}
	images := container{
		Name:         "images",
		Image:        o.Image,
		Command:      append([]string{"mcpsandbox", "images", "build"}, o.Images...),
		Env:          toolEnv,
		VolumeMounts: shared,
	}
	args := []string{"--shard", ShardArg(o.Shards), "--results", ShardResults()}
	args = append(args, o.BulkArgs...)
	for _, l := range o.Lists {
		args = append(args, ListsDir+"/"+l)
	}
	bulkEnv := append([]envVar{{Name: ShardEnv, ValueFrom: &envVarSource{FieldRef: &objectFieldSelector{FieldPath: completionIndex}}}}, toolEnv...)
	bulk := container{
		Name:    "bulk",
		Image:   o.Image,
		Command: []string{"mcpsandbox", "bulk"},
		Args:    args,
		Env:     bulkEnv,
		// Privileged as the runner is on a host: it enters a sandbox's
		// namespaces (the workspace mount, HTTP servers) and reads its
		// processes' /proc, which the shared process namespace shows.
		SecurityContext: &securityContext{Privileged: true},
		VolumeMounts: append(append([]volumeMount(nil), shared...),
			volumeMount{Name: "results", MountPath: ResultsDir},
			volumeMount{Name: "lists", MountPath: ListsDir, ReadOnly: true}),
	}
	return job{
		APIVersion: "batch/v1",
		Kind:       "Job",
		Metadata:   objectMeta{Name: o.Name, Namespace: o.Namespace, Labels: labels},
		Spec: jobSpec{
			CompletionMode:       "Indexed",
			Completions:          o.Shards,
			Parallelism:          o.Parallelism,
			BackoffLimitPerIndex: o.BackoffLimitPerIndex,
			Template: podTemplateSpec{
				Metadata: objectMeta{Labels: labels},
				Spec: podSpec{
					RestartPolicy:         "Never",
					ShareProcessNamespace: true,
					InitContainers:        []container{engine, images},
					Containers:            []container{bulk},
					Volumes: []volume{
						{Name: "docker-root", EmptyDir: &struct{}{}},
						{Name: "engine-socket", EmptyDir: &struct{}{}},
						{Name: "scratch", EmptyDir: &struct{}{}},
						{Name: "results", PersistentVolumeClaim: &persistentVolumeClaim{ClaimName: o.ResultsClaim}},
						{Name: "lists", ConfigMap: &configMapVolume{Name: o.ListsConfigMap}},
					},
				},
			},
		},
	}
}

// Write prints the Job as YAML.
func Write(w io.Writer, o Options) error {
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		return err
	}
	b, err := json.Marshal(build(o))
	if err != nil {
		return fmt.Errorf("encoding the job: %w", err)
	}
	y, err := toYAML(b)
	if err != nil {
		return fmt.Errorf("encoding the job: %w", err)
	}
	_, err = w.Write(y)
	return err
}
