package cli

import (
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"
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

func stripManagedFields(obj runtime.Object) {
	if meta.IsListType(obj) {
		_ = meta.EachListItem(obj, func(o runtime.Object) error { stripManagedFields(o); return nil })
		return
	}
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
}
