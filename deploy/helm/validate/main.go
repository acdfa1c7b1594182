// spindle-k8s-validate checks rendered Kubernetes manifests offline (no cluster, no schemas from
// the network): it reads the multi-document YAML `helm template` prints, from the files named or
// from standard input, and decodes each document strictly into Kubernetes' own Go types, chosen
// by apiVersion and kind. A document fails on an unknown apiVersion/kind, an unknown or duplicate
// field, a field of the wrong type or case (the API server's decoding is case-sensitive too), a
// quantity that does not parse. Then cross-object checks the API server would not make but a
// broken chart shows: selectors that select the pod template, ports that the probes, services and
// hooks name, volumes that mounts name, objects that references name (checks.go).
//
// Prints one line per object ("ok apps/v1 StatefulSet spindle") and exits 0, or prints every
// problem on standard error and exits 1. Built by scripts/ensure-helm.sh; used by
// test/deploy/helm.test.ts.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// kinds is the one table of what may appear in a render: "apiVersion kind" -> a new object of
// its Go type. Anything else is refused, so a typo in apiVersion is not waved through.
var kinds = map[string]func() any{
	"v1 ConfigMap":                             func() any { return &corev1.ConfigMap{} },
	"v1 Secret":                                func() any { return &corev1.Secret{} },
	"v1 Service":                               func() any { return &corev1.Service{} },
	"v1 ServiceAccount":                        func() any { return &corev1.ServiceAccount{} },
	"v1 PersistentVolumeClaim":                 func() any { return &corev1.PersistentVolumeClaim{} },
	"v1 Pod":                                   func() any { return &corev1.Pod{} },
	"apps/v1 StatefulSet":                      func() any { return &appsv1.StatefulSet{} },
	"apps/v1 Deployment":                       func() any { return &appsv1.Deployment{} },
	"policy/v1 PodDisruptionBudget":            func() any { return &policyv1.PodDisruptionBudget{} },
	"networking.k8s.io/v1 NetworkPolicy":       func() any { return &networkingv1.NetworkPolicy{} },
	"networking.k8s.io/v1 Ingress":             func() any { return &networkingv1.Ingress{} },
	"rbac.authorization.k8s.io/v1 Role":        func() any { return &rbacv1.Role{} },
	"rbac.authorization.k8s.io/v1 RoleBinding": func() any { return &rbacv1.RoleBinding{} },
	"autoscaling/v2 HorizontalPodAutoscaler":   func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
	"batch/v1 Job":                             func() any { return &batchv1.Job{} },
}

// decoded is one document of the render.
type decoded struct {
	source string // "# Source:" comment helm writes, or "document N"
	key    string // "apiVersion kind"
	obj    any
	meta   *metav1.ObjectMeta
}

func main() {
	inputs, err := readInputs(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "spindle-k8s-validate:", err)
		os.Exit(2)
	}
	var objs []decoded
	var problems []string
	for _, in := range inputs {
		docs, err := splitDocuments(in)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		for i, doc := range docs {
			d, err := decode(doc, i+1)
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			if d != nil {
				objs = append(objs, *d)
			}
		}
	}
	if len(objs) == 0 && len(problems) == 0 {
		problems = append(problems, "no Kubernetes object in the input")
	}
	problems = append(problems, check(objs)...)
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, p)
		}
		os.Exit(1)
	}
	for _, d := range objs {
		fmt.Printf("ok %s %s\n", d.key, d.meta.Name)
	}
}

func readInputs(files []string) ([][]byte, error) {
	if len(files) == 0 {
		b, err := io.ReadAll(os.Stdin)
		return [][]byte{b}, err
	}
	var out [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

func splitDocuments(in []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(in)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("splitting the YAML documents: %w", err)
		}
		docs = append(docs, doc)
	}
}

// decode turns one YAML document into its Kubernetes type, strictly; nil for a document with
// nothing but comments (helm prints one for a template that rendered empty).
func decode(doc []byte, n int) (*decoded, error) {
	source := fmt.Sprintf("document %d", n)
	for _, line := range strings.Split(string(doc), "\n") {
		if rest, ok := strings.CutPrefix(line, "# Source: "); ok {
			source = rest
			break
		}
	}
	// Duplicate keys are refused here, before JSON (where the last one would win silently).
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, fmt.Errorf("%s: not valid YAML: %w", source, err)
	}
	if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
		return nil, nil
	}
	var tm metav1.TypeMeta
	if err := kjson.UnmarshalCaseSensitivePreserveInts(js, &tm); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	key := tm.APIVersion + " " + tm.Kind
	newObject, ok := kinds[key]
	if !ok {
		return nil, fmt.Errorf("%s: unknown apiVersion and kind %q (known: see kinds in deploy/helm/validate/main.go)", source, key)
	}
	obj := newObject()
	strict, err := kjson.UnmarshalStrict(js, obj, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return nil, fmt.Errorf("%s (%s): %w", source, key, err)
	}
	if len(strict) > 0 {
		return nil, fmt.Errorf("%s (%s): %w", source, key, errors.Join(strict...))
	}
	meta := objectMeta(obj)
	return &decoded{source: source, key: key, obj: obj, meta: meta}, nil
}

// objectMeta is the ObjectMeta of any type in kinds.
func objectMeta(obj any) *metav1.ObjectMeta {
	type metaHolder interface{ GetObjectMeta() metav1.Object }
	if h, ok := obj.(metaHolder); ok {
		if m, ok := h.GetObjectMeta().(*metav1.ObjectMeta); ok {
			return m
		}
	}
	panic(fmt.Sprintf("%T has no ObjectMeta", obj))
}
