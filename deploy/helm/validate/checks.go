// Checks across the decoded objects of one render: what the API server accepts (or checks only
// once the objects exist) but leaves a chart broken: a selector that selects nothing, a probe on a
// port the container does not declare, a mount of a volume that is not there, a key of a
// ConfigMap or Secret of the render that is not in it, a $(VAR) that no earlier variable defines.
package main

import (
	"fmt"
	"regexp"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
)

// workload is an object that makes pods.
type workload struct {
	d        decoded
	selector *metav1.LabelSelector // nil for a bare Pod
	template corev1.PodTemplateSpec
	claims   []string // StatefulSet volumeClaimTemplates
}

type report struct{ problems []string }

func (r *report) add(d decoded, format string, args ...any) {
	r.problems = append(r.problems, fmt.Sprintf("%s (%s %s): %s", d.source, d.key, d.meta.Name, fmt.Sprintf(format, args...)))
}

func check(objs []decoded) []string {
	r := &report{}
	configMaps := map[string]map[string]bool{}
	secrets := map[string]map[string]bool{}
	services := map[string]*corev1.Service{}
	var workloads []workload
	seen := map[string]bool{}
	for _, d := range objs {
		checkMeta(r, d)
		id := d.key + "/" + d.meta.Name
		if seen[id] {
			r.add(d, "a second object of this kind and name")
		}
		seen[id] = true
		switch o := d.obj.(type) {
		case *corev1.ConfigMap:
			configMaps[o.Name] = keysOf(o.Data, o.BinaryData)
		case *corev1.Secret:
			secrets[o.Name] = keysOf(o.StringData, o.Data)
		case *corev1.Service:
			services[o.Name] = o
		case *appsv1.StatefulSet:
			w := workload{d: d, selector: o.Spec.Selector, template: o.Spec.Template}
			for _, c := range o.Spec.VolumeClaimTemplates {
				w.claims = append(w.claims, c.Name)
			}
			workloads = append(workloads, w)
		case *appsv1.Deployment:
			workloads = append(workloads, workload{d: d, selector: o.Spec.Selector, template: o.Spec.Template})
		case *batchv1.Job:
			workloads = append(workloads, workload{d: d, selector: o.Spec.Selector, template: o.Spec.Template})
		case *corev1.Pod:
			workloads = append(workloads, workload{d: d, template: corev1.PodTemplateSpec{ObjectMeta: o.ObjectMeta, Spec: o.Spec}})
		}
	}
	for _, w := range workloads {
		checkWorkload(r, w, configMaps, secrets)
		if s, ok := w.d.obj.(*appsv1.StatefulSet); ok {
			checkStatefulSet(r, w.d, s, services)
		}
	}
	for _, d := range objs {
		switch o := d.obj.(type) {
		case *corev1.Service:
			checkService(r, d, o, workloads)
		case *policyv1.PodDisruptionBudget:
			checkBudget(r, d, o, workloads)
		}
	}
	return r.problems
}

func keysOf[V any, W any](a map[string]V, b map[string]W) map[string]bool {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	return keys
}

func checkMeta(r *report, d decoded) {
	m := d.meta
	if m.Name == "" {
		r.add(d, "metadata.name is empty")
	}
	nameErrs := validation.IsDNS1123Subdomain(m.Name)
	if _, ok := d.obj.(*corev1.Service); ok {
		nameErrs = validation.IsDNS1035Label(m.Name)
	}
	for _, e := range nameErrs {
		r.add(d, "metadata.name: %s", e)
	}
	if m.Namespace != "" {
		for _, e := range validation.IsDNS1123Label(m.Namespace) {
			r.add(d, "metadata.namespace: %s", e)
		}
	}
	checkLabels(r, d, "metadata.labels", m.Labels)
}

func checkLabels(r *report, d decoded, where string, l map[string]string) {
	for k, v := range l {
		for _, e := range validation.IsQualifiedName(k) {
			r.add(d, "%s key %q: %s", where, k, e)
		}
		for _, e := range validation.IsValidLabelValue(v) {
			r.add(d, "%s[%q]: %s", where, k, e)
		}
	}
}

func checkWorkload(r *report, w workload, configMaps, secrets map[string]map[string]bool) {
	d := w.d
	podLabels := w.template.Labels
	checkLabels(r, d, "template labels", podLabels)
	if _, bare := d.obj.(*corev1.Pod); !bare {
		if w.selector == nil {
			r.add(d, "spec.selector is missing")
		} else if sel, err := metav1.LabelSelectorAsSelector(w.selector); err != nil {
			r.add(d, "spec.selector: %v", err)
		} else if sel.Empty() || !sel.Matches(labels.Set(podLabels)) {
			r.add(d, "spec.selector %s does not select the pod template's labels %v", sel, podLabels)
		}
	}
	spec := w.template.Spec
	if len(spec.Containers) == 0 {
		r.add(d, "the pod has no container")
	}
	volumes := map[string]bool{}
	for _, v := range spec.Volumes {
		if volumes[v.Name] {
			r.add(d, "volume %q twice", v.Name)
		}
		volumes[v.Name] = true
		if cm := v.ConfigMap; cm != nil && configMaps[cm.Name] != nil {
			for _, it := range cm.Items {
				if !configMaps[cm.Name][it.Key] {
					r.add(d, "volume %q: ConfigMap %s has no key %q", v.Name, cm.Name, it.Key)
				}
			}
		}
		if s := v.Secret; s != nil && secrets[s.SecretName] != nil {
			for _, it := range s.Items {
				if !secrets[s.SecretName][it.Key] {
					r.add(d, "volume %q: Secret %s has no key %q", v.Name, s.SecretName, it.Key)
				}
			}
		}
	}
	for _, c := range w.claims {
		if volumes[c] {
			r.add(d, "volume claim template %q has the name of a volume", c)
		}
		volumes[c] = true
	}
	names := map[string]bool{}
	all := append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...)
	for _, c := range all {
		if names[c.Name] {
			r.add(d, "container %q twice", c.Name)
		}
		names[c.Name] = true
		checkContainer(r, d, c, volumes, configMaps, secrets)
	}
	if g := spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		r.add(d, "terminationGracePeriodSeconds %d < 0", *g)
	}
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)`)

func checkContainer(r *report, d decoded, c corev1.Container, volumes map[string]bool, configMaps, secrets map[string]map[string]bool) {
	where := fmt.Sprintf("container %q", c.Name)
	if c.Image == "" {
		r.add(d, "%s: no image", where)
	}
	ports := map[string]bool{}
	numbers := map[int32]bool{}
	for _, p := range c.Ports {
		if p.Name != "" {
			for _, e := range validation.IsValidPortName(p.Name) {
				r.add(d, "%s: port name %q: %s", where, p.Name, e)
			}
			if ports[p.Name] {
				r.add(d, "%s: port name %q twice", where, p.Name)
			}
			ports[p.Name] = true
		}
		for _, e := range validation.IsValidPortNum(int(p.ContainerPort)) {
			r.add(d, "%s: containerPort: %s", where, e)
		}
		numbers[p.ContainerPort] = true
	}
	portKnown := func(what string, p intstr.IntOrString) {
		if p.Type == intstr.String && !ports[p.StrVal] {
			r.add(d, "%s: %s names port %q, which the container does not declare", where, what, p.StrVal)
		}
		if p.Type == intstr.Int && !numbers[p.IntVal] {
			r.add(d, "%s: %s uses port %d, which the container does not declare", where, what, p.IntVal)
		}
	}
	probe := func(what string, p *corev1.Probe) {
		if p == nil {
			return
		}
		h := p.ProbeHandler
		n := 0
		if h.HTTPGet != nil {
			n++
			portKnown(what, h.HTTPGet.Port)
			if !strings.HasPrefix(h.HTTPGet.Path, "/") {
				r.add(d, "%s: %s path %q is not absolute", where, what, h.HTTPGet.Path)
			}
		}
		if h.TCPSocket != nil {
			n++
			portKnown(what, h.TCPSocket.Port)
		}
		if h.GRPC != nil {
			n++
			portKnown(what, intstr.FromInt32(h.GRPC.Port))
		}
		if h.Exec != nil {
			n++
			if len(h.Exec.Command) == 0 {
				r.add(d, "%s: %s exec has no command", where, what)
			}
		}
		if n != 1 {
			r.add(d, "%s: %s has %d handlers (exactly one is allowed)", where, what, n)
		}
	}
	probe("startupProbe", c.StartupProbe)
	probe("livenessProbe", c.LivenessProbe)
	probe("readinessProbe", c.ReadinessProbe)
	if l := c.Lifecycle; l != nil {
		for _, hook := range []struct {
			what string
			h    *corev1.LifecycleHandler
		}{{"postStart", l.PostStart}, {"preStop", l.PreStop}} {
			what, h := hook.what, hook.h
			if h == nil {
				continue
			}
			if h.Exec != nil && len(h.Exec.Command) == 0 {
				r.add(d, "%s: %s exec has no command", where, what)
			}
			if h.HTTPGet != nil {
				portKnown(what, h.HTTPGet.Port)
			}
		}
	}
	mounts := map[string]bool{}
	for _, m := range c.VolumeMounts {
		if !volumes[m.Name] {
			r.add(d, "%s: mounts volume %q, which the pod does not have", where, m.Name)
		}
		if !strings.HasPrefix(m.MountPath, "/") {
			r.add(d, "%s: mountPath %q is not absolute", where, m.MountPath)
		}
		if mounts[m.MountPath] {
			r.add(d, "%s: two mounts at %s", where, m.MountPath)
		}
		mounts[m.MountPath] = true
	}
	// A $(VAR) that no earlier variable defines is left as it is by the kubelet: a silent bug.
	defined := map[string]bool{}
	refs := func(what, text string) {
		for _, m := range varRef.FindAllStringSubmatch(text, -1) {
			if !defined[m[1]] {
				r.add(d, "%s: %s refers to $(%s), which no earlier env entry defines", where, what, m[1])
			}
		}
	}
	for _, e := range c.Env {
		for _, msg := range validation.IsEnvVarName(e.Name) {
			r.add(d, "%s: env %q: %s", where, e.Name, msg)
		}
		refs("env "+e.Name, e.Value)
		if f := e.ValueFrom; f != nil {
			if k := f.SecretKeyRef; k != nil && secrets[k.Name] != nil && !secrets[k.Name][k.Key] && (k.Optional == nil || !*k.Optional) {
				r.add(d, "%s: env %s: Secret %s has no key %q", where, e.Name, k.Name, k.Key)
			}
			if k := f.ConfigMapKeyRef; k != nil && configMaps[k.Name] != nil && !configMaps[k.Name][k.Key] && (k.Optional == nil || !*k.Optional) {
				r.add(d, "%s: env %s: ConfigMap %s has no key %q", where, e.Name, k.Name, k.Key)
			}
		}
		defined[e.Name] = true
	}
	for _, a := range append(append([]string{}, c.Command...), c.Args...) {
		refs("command/args", a)
	}
	for name, limit := range c.Resources.Limits {
		if req, ok := c.Resources.Requests[name]; ok && req.Cmp(limit) > 0 {
			r.add(d, "%s: %s request %s is above its limit %s", where, name, req.String(), limit.String())
		}
	}
}

func checkStatefulSet(r *report, d decoded, s *appsv1.StatefulSet, services map[string]*corev1.Service) {
	if s.Spec.ServiceName == "" {
		return
	}
	svc := services[s.Spec.ServiceName]
	if svc == nil {
		r.add(d, "serviceName %q names no Service of the render", s.Spec.ServiceName)
		return
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		r.add(d, "serviceName %q names a Service that is not headless (clusterIP: None)", s.Spec.ServiceName)
	}
}

// selected: the workloads whose pods the selector picks.
func selected(sel labels.Selector, workloads []workload) []workload {
	var out []workload
	for _, w := range workloads {
		if sel.Matches(labels.Set(w.template.Labels)) {
			out = append(out, w)
		}
	}
	return out
}

func checkService(r *report, d decoded, s *corev1.Service, workloads []workload) {
	if s.Spec.Type == corev1.ServiceTypeExternalName {
		return
	}
	if len(s.Spec.Selector) == 0 {
		r.add(d, "no selector (endpoints would have to be managed by hand)")
		return
	}
	pods := selected(labels.SelectorFromSet(s.Spec.Selector), workloads)
	if len(pods) == 0 {
		r.add(d, "selector %v selects no pod template of the render", s.Spec.Selector)
		return
	}
	names := map[string]bool{}
	for _, p := range s.Spec.Ports {
		if len(s.Spec.Ports) > 1 && p.Name == "" {
			r.add(d, "port %d has no name (needed with more than one port)", p.Port)
		}
		if names[p.Name] {
			r.add(d, "port name %q twice", p.Name)
		}
		names[p.Name] = true
		target := p.TargetPort
		if target.Type == intstr.Int && target.IntVal == 0 {
			target = intstr.FromInt32(p.Port)
		}
		for _, w := range pods {
			if !declares(w.template.Spec, target) {
				r.add(d, "port %q targets %s, which %s %s does not declare", p.Name, target.String(), w.d.key, w.d.meta.Name)
			}
		}
	}
}

func declares(spec corev1.PodSpec, p intstr.IntOrString) bool {
	for _, c := range spec.Containers {
		for _, cp := range c.Ports {
			if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
				return true
			}
		}
	}
	return false
}

func checkBudget(r *report, d decoded, b *policyv1.PodDisruptionBudget, workloads []workload) {
	if (b.Spec.MinAvailable == nil) == (b.Spec.MaxUnavailable == nil) {
		r.add(d, "exactly one of minAvailable and maxUnavailable must be set")
	}
	if b.Spec.Selector == nil {
		r.add(d, "no selector")
		return
	}
	sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
	if err != nil {
		r.add(d, "selector: %v", err)
		return
	}
	if len(selected(sel, workloads)) == 0 {
		r.add(d, "selector %s selects no pod template of the render", sel)
	}
}
