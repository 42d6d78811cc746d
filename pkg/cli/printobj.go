package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

// validOutput checks an -o value against the formats a command prints.
func validOutput(format string, allowed ...string) error {
	for _, a := range allowed {
		if format == a {
			return nil
		}
	}
	shown := make([]string, 0, len(allowed))
	for _, a := range allowed {
		if a != "" {
			shown = append(shown, a)
		}
	}
	return fmt.Errorf("--output (-o) must be one of %s, not %q", strings.Join(shown, ", "), format)
}

// printObject prints an object (or a list) as yaml, json or name, like kubectl -o, without
// managed fields. The object must carry its apiVersion and kind.
func printObject(obj runtime.Object, format string, w io.Writer) error {
	obj = obj.DeepCopyObject()
	stripManagedFields(obj)
	var p printers.ResourcePrinter
	switch format {
	case "yaml":
		p = &printers.YAMLPrinter{}
	case "json":
		p = &printers.JSONPrinter{}
	case "name":
		p = &printers.NamePrinter{}
	default:
		return fmt.Errorf("unknown output format %q", format)
	}
	return p.PrintObj(obj, w)
}

// printObjects prints objects like kubectl -o: one object (single) as itself; otherwise a v1 List
// for yaml and json, one name a line for name. Each object must carry its apiVersion and kind.
func printObjects(w io.Writer, format string, single bool, objs []runtime.Object) error {
	if single && len(objs) == 1 {
		return printObject(objs[0], format, w)
	}
	if format == "name" {
		for _, obj := range objs {
			if err := printObject(obj, "name", w); err != nil {
				return err
			}
		}
		return nil
	}
	list := &metav1.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}}
	for _, obj := range objs {
		list.Items = append(list.Items, runtime.RawExtension{Object: obj})
	}
	return printObject(list, format, w)
}

func stripManagedFields(obj runtime.Object) {
	if meta.IsListType(obj) {
		_ = meta.EachListItem(obj, func(o runtime.Object) error { stripManagedFields(o); return nil })
		return
	}
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
}

// servingOutput is the -o flag of the commands that change one serving. Without it they say what
// they did in a sentence; with it they print the serving as it is after the change, as kubectl's
// set, scale and rollout commands do, so a script can read it back without a second call.
type servingOutput struct{ Output string }

func (s *servingOutput) addOutputFlag(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&s.Output, "output", "o", "", "Print the changed serving instead of a sentence: yaml, json or name")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]cobra.Completion{"yaml", "json", "name"}, cobra.ShellCompDirectiveNoFileComp))
}

func (s *servingOutput) validateOutput() error {
	return validOutput(s.Output, "", "yaml", "json", "name")
}

// printChanged prints the sentence (a format and its arguments), or with -o the serving.
func (s *servingOutput) printChanged(w io.Writer, ms *v1.ModelServing, sentence string, args ...any) error {
	if s.Output == "" {
		_, err := fmt.Fprintf(w, sentence, args...)
		return err
	}
	ms = ms.DeepCopy()
	ms.SetGroupVersionKind(v1.GroupVersion.WithKind("ModelServing"))
	return printObject(ms, s.Output, w)
}
