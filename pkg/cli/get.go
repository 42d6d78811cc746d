package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/status"
	"github.com/kubectl-llm/kubectl-llm/pkg/tui"
)

// GetOptions list servings as a table or as objects.
type GetOptions struct {
	*RootOptions
	servingTarget
	output        *outputFlags
	AllNamespaces bool
	Watch         bool
	// withRoles adds the ROLES column: some serving listed has spec.roles.
	withRoles bool

	colors colors
}

func newGetCommand(root *RootOptions) *cobra.Command {
	o := &GetOptions{RootOptions: root}
	cmd := &cobra.Command{
		Use:     "get [NAME]",
		Aliases: []string{"list", "ls"},
		Short:   "List model servings: groups ready/desired, up-to-date, phase",
		Long: `List model servings, or show one. READY counts groups whose every pod is ready, over the desired
groups; UP-TO-DATE counts groups on the update revision. -o wide adds the engine, group size,
update revision and the in-cluster endpoint. -w prints a line each time a serving changes.
A serving with roles (prefill and decode) adds the ROLES column, each role's groups ready over
desired; when -w started without one, the first serving with roles it sees is printed under a
new header with the ROLES column, which the lines after it follow.`,
		Example: `  kubectl llm get
  kubectl llm get qwen -o wide
  kubectl llm list -A
  kubectl llm get qwen -o yaml
  kubectl llm get -w`,
		ValidArgsFunction: completeServingNames(root),
		RunE:              runE(o.Complete, o.Validate, o.Run),
	}
	o.output = newOutputFlags("table", "wide")
	o.output.addFlags(cmd, "Output format: table, wide, yaml, json or name")
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "List servings of every namespace")
	cmd.Flags().BoolVarP(&o.Watch, "watch", "w", false, "After listing, print a line for every change")
	return cmd
}

// Complete reads the optional NAME and resolves the client.
func (o *GetOptions) Complete(_ *cobra.Command, args []string) error {
	o.colors = newColors(o.RootOptions, o.Streams.Out)
	return o.complete(o.RootOptions, args)
}

// Validate checks the output format and flag combinations.
func (o *GetOptions) Validate() error {
	if len(o.args) > 1 {
		return fmt.Errorf("expected at most one NAME, got %d arguments (%s)", len(o.args), strings.Join(o.args, " "))
	}
	if err := o.output.validate(); err != nil {
		return err
	}
	if o.Name != "" && o.AllNamespaces {
		return fmt.Errorf("NAME cannot be combined with --all-namespaces (-A): a name is looked up in one namespace")
	}
	if o.Watch && !o.output.ownFormat() {
		return fmt.Errorf("--watch (-w) prints table lines: use it with -o table or -o wide, not -o %s", o.output.format())
	}
	return nil
}

// Run prints the servings, then the changes when watching.
func (o *GetOptions) Run(ctx context.Context) error {
	ns := o.namespace
	if o.AllNamespaces {
		ns = ""
	}
	host := o.host()
	if o.Watch {
		return o.watch(ctx, ns, host)
	}
	// Each serving is decoded on its own: a bad one is shown as bad, the others still print.
	var items []servingItem
	if o.Name != "" {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(v1.GroupVersion.WithKind("ModelServing"))
		err := o.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: o.Name}, u)
		if apierrors.IsNotFound(err) {
			return notFound(ctx, o.client, ns, o.Name, host)
		}
		if err != nil {
			return explain(err, host)
		}
		items = []servingItem{decodeServing(u)}
	} else {
		opts := []client.ListOption{}
		if ns != "" {
			opts = append(opts, client.InNamespace(ns))
		}
		var err error
		if items, _, err = listServings(ctx, o.client, opts...); err != nil {
			return explain(err, host)
		}
	}
	sortServings(items)
	warnBad(o.Streams.ErrOut, items)
	if !o.output.ownFormat() {
		return o.printObjects(items)
	}
	if len(items) == 0 {
		if o.AllNamespaces {
			fmt.Fprintln(o.Streams.ErrOut, "No servings found.")
		} else {
			fmt.Fprintf(o.Streams.ErrOut, "No servings found in %s namespace.\n", ns)
		}
		return nil
	}
	o.withRoles = anyRoles(items)
	rows := [][]string{o.header()}
	for i := range items {
		rows = append(rows, o.row(&items[i], ""))
	}
	renderTable(o.Streams.Out, rows, nil)
	return nil
}

// anyRoles reports whether some serving has spec.roles: only then has the table a ROLES column,
// so a namespace without roles prints as it always did.
func anyRoles(items []servingItem) bool {
	for i := range items {
		if len(items[i].Spec.Roles) > 0 {
			return true
		}
	}
	return false
}

// rolesReady is each role's groups ready over desired, "prefill 2/2, decode 5/6"; "-" without roles.
func rolesReady(ms *v1.ModelServing) string {
	if len(ms.Spec.Roles) == 0 {
		return "-"
	}
	var parts []string
	for _, name := range v1.RoleNames() {
		r := ms.Spec.Role(name)
		if r == nil {
			continue
		}
		ready := fmt.Sprintf("0/%d", ptr.Deref(r.Replicas, 1))
		for _, st := range ms.Status.Roles {
			if st.Name == name {
				ready = fmt.Sprintf("%d/%d", st.ReadyReplicas, ptr.Deref(r.Replicas, 1))
			}
		}
		parts = append(parts, string(name)+" "+ready)
	}
	return strings.Join(parts, ", ")
}

// groupSizes is the group size, or each role's: "prefill 2, decode 4".
func groupSizes(ms *v1.ModelServing) string {
	if len(ms.Spec.Roles) == 0 {
		return fmt.Sprint(max(ms.Spec.GroupSize, 1))
	}
	var parts []string
	for _, name := range v1.RoleNames() {
		if spec, ok := ms.Spec.ForRole(name); ok {
			parts = append(parts, fmt.Sprintf("%s %d", name, max(spec.GroupSize, 1)))
		}
	}
	return strings.Join(parts, ", ")
}

func (o *GetOptions) watch(ctx context.Context, ns, host string) error {
	var widths []int
	// shown is the resourceVersion each serving was last printed at: the watch hands over the
	// listed servings again, and a relist every serving, changed or not.
	shown := map[string]string{}
	onList := func(items []servingItem) (bool, error) {
		o.withRoles = o.withRoles || anyRoles(items)
		for i := range items {
			shown[items[i].Namespace+"/"+items[i].Name] = items[i].ResourceVersion
		}
		sortServings(items)
		rows := [][]string{o.header()}
		for i := range items {
			rows = append(rows, o.row(&items[i], ""))
		}
		// Later lines may say a longer phase than the first table did: keep them aligned.
		widths = renderTable(io.Discard, rows, nil)
		for i, h := range rows[0] {
			if h == "PHASE" {
				widths[i] = max(widths[i], len(v1.PhaseProgressing))
			}
		}
		renderTable(o.Streams.Out, rows, widths)
		return false, nil
	}
	onEvent := func(t watch.EventType, it servingItem) (bool, error) {
		key := it.Namespace + "/" + it.Name
		phase := ""
		switch {
		case t == watch.Deleted:
			phase = "Deleted"
			delete(shown, key)
		case shown[key] == it.ResourceVersion:
			return false, nil
		default:
			shown[key] = it.ResourceVersion
		}
		if !o.withRoles && len(it.Spec.Roles) > 0 {
			widths = o.addRolesColumn(&it, phase, widths)
		}
		renderTable(o.Streams.Out, [][]string{o.row(&it, phase)}, widths)
		return false, nil
	}
	name := o.Name
	err := watchServings(ctx, o.client, ns, name, onList, onEvent)
	if err == context.Canceled || err == context.DeadlineExceeded {
		return nil
	}
	return explain(err, host)
}

// addRolesColumn is how a watch that started without roles shows the first serving with roles
// it sees: a new header, with the ROLES column, printed once above that serving's line, and the
// lines after it aligned to that header (each column as wide as before, ROLES as this line's).
func (o *GetOptions) addRolesColumn(it *servingItem, phase string, widths []int) []int {
	before := map[string]int{}
	for i, h := range o.header() {
		if i < len(widths) {
			before[h] = widths[i]
		}
	}
	o.withRoles = true
	rows := [][]string{o.header(), o.row(it, phase)}
	widths = renderTable(io.Discard, rows, nil)
	for i, h := range rows[0] {
		widths[i] = max(widths[i], before[h])
	}
	renderTable(o.Streams.Out, rows[:1], widths)
	return widths
}

func (o *GetOptions) header() []string {
	h := []string{"NAME", "MODEL", "READY", "UP-TO-DATE", "PHASE", "AGE"}
	if o.withRoles {
		h = slices.Insert(h, 3, "ROLES")
	}
	if o.output.format() == "wide" {
		h = append(h, "ENGINE", "GROUP-SIZE", "REVISION", "ENDPOINT")
	}
	if o.AllNamespaces {
		h = append([]string{"NAMESPACE"}, h...)
	}
	return h
}

func (o *GetOptions) row(it *servingItem, phaseOverride string) []string {
	ms := &it.ModelServing
	st := ms.Status
	ready := st.ReadyGroups
	if ready == "" {
		ready = fmt.Sprintf("%d/%d", st.ReadyReplicas, status.DesiredGroups(ms.Spec))
	}
	phase := it.phase()
	if phase == "" {
		phase = "-"
	}
	if phaseOverride != "" {
		phase = phaseOverride
	}
	if it.Undecodable {
		ready = "-"
	}
	r := []string{ms.Name, orDash(ms.Spec.Model), ready, fmt.Sprint(st.UpdatedReplicas), o.colors.state(phase), tui.Age(o.Clock.Now(), ms.CreationTimestamp.Time)}
	if o.withRoles {
		roles := rolesReady(ms)
		if it.Undecodable {
			roles = "-"
		}
		r = slices.Insert(r, 3, roles)
	}
	if o.output.format() == "wide" {
		engine := string(ms.Spec.Engine.Type)
		if engine == "" {
			engine = string(v1.EngineVLLM)
		}
		r = append(r, engine, groupSizes(ms), orDash(st.UpdateRevision), orDash(st.Endpoint))
	}
	if o.AllNamespaces {
		r = append([]string{ms.Namespace}, r...)
	}
	return r
}

func (o *GetOptions) printObjects(items []servingItem) error {
	gvk := v1.GroupVersion.WithKind("ModelServing")
	objs := make([]runtime.Object, len(items))
	for i := range items {
		items[i].SetGroupVersionKind(gvk)
		objs[i] = &items[i].ModelServing
		if items[i].Undecodable { // print it as stored: the typed object would lose what is wrong
			objs[i] = items[i].raw
		}
	}
	return o.output.printObjects(o.Streams.Out, o.Name != "", objs)
}

func sortServings(items []servingItem) {
	sort.SliceStable(items, func(i, j int) bool {
		if items[i].Namespace != items[j].Namespace {
			return items[i].Namespace < items[j].Namespace
		}
		return items[i].Name < items[j].Name
	})
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
