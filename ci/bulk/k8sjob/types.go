package k8sjob

// The subset of the Kubernetes API (batch/v1 Job, core/v1 PodSpec) that
// the Job uses, with the API's own field names: this package prints the
// manifest without importing k8s.io/api (a large module the runner does
// not need); the test module in k8stest decodes what it prints strictly
// into the official types, so a misspelt or misplaced field fails there.

type job struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   objectMeta `json:"metadata"`
	Spec       jobSpec    `json:"spec"`
}

type objectMeta struct {
	Name      string            `json:"name,omitempty"`
	Namespace string            `json:"namespace,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
}

type jobSpec struct {
	CompletionMode       string          `json:"completionMode"`
	Completions          int             `json:"completions"`
	Parallelism          int             `json:"parallelism"`
	BackoffLimitPerIndex *int            `json:"backoffLimitPerIndex,omitempty"`
	Template             podTemplateSpec `json:"template"`
}

type podTemplateSpec struct {
	Metadata objectMeta `json:"metadata"`
	Spec     podSpec    `json:"spec"`
}

type podSpec struct {
	RestartPolicy         string      `json:"restartPolicy"`
	ShareProcessNamespace bool        `json:"shareProcessNamespace"`
	InitContainers        []container `json:"initContainers"`
	Containers            []container `json:"containers"`
	Volumes               []volume    `json:"volumes"`
}

type container struct {
	Name            string               `json:"name"`
	Image           string               `json:"image"`
	Command         []string             `json:"command,omitempty"`
	Args            []string             `json:"args,omitempty"`
	Env             []envVar             `json:"env,omitempty"`
	RestartPolicy   string               `json:"restartPolicy,omitempty"`
	SecurityContext *securityContext     `json:"securityContext,omitempty"`
	StartupProbe    *probe               `json:"startupProbe,omitempty"`
	Resources       *resourceRequirement `json:"resources,omitempty"`
	VolumeMounts    []volumeMount        `json:"volumeMounts"`
}

type envVar struct {
	Name      string        `json:"name"`
	Value     *string       `json:"value,omitempty"`
	ValueFrom *envVarSource `json:"valueFrom,omitempty"`
}

type envVarSource struct {
	FieldRef *objectFieldSelector `json:"fieldRef,omitempty"`
}

type objectFieldSelector struct {
	FieldPath string `json:"fieldPath"`
}

type securityContext struct {
	Privileged bool `json:"privileged"`
}

type probe struct {
	Exec             *execAction `json:"exec"`
	PeriodSeconds    int         `json:"periodSeconds"`
	FailureThreshold int         `json:"failureThreshold"`
}

type execAction struct {
	Command []string `json:"command"`
}

type resourceRequirement struct {
	Requests map[string]string `json:"requests,omitempty"`
	Limits   map[string]string `json:"limits,omitempty"`
}

type volumeMount struct {
	Name      string `json:"name"`
	MountPath string `json:"mountPath"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
}

type volume struct {
	Name                  string                 `json:"name"`
	EmptyDir              *struct{}              `json:"emptyDir,omitempty"`
	ConfigMap             *configMapVolume       `json:"configMap,omitempty"`
	PersistentVolumeClaim *persistentVolumeClaim `json:"persistentVolumeClaim,omitempty"`
}

type configMapVolume struct {
	Name string `json:"name"`
}

type persistentVolumeClaim struct {
	ClaimName string `json:"claimName"`
}
