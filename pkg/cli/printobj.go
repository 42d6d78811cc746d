package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/scheme"
)

// outputFlags is the -o flag of a command, on cli-runtime's PrintFlags as kubectl's own commands
// use them: yaml, json and name, kubectl's jsonpath and go-template formats (with --template),
// and managed fields left out unless --show-managed-fields. own are the formats the command
// prints itself ("" is its default: a sentence or a line per object; get adds table and wide).
type outputFlags struct {
	print *genericclioptions.PrintFlags
	own   []string
	// printer prints the PrintFlags formats; validate makes it.
	printer printers.ResourcePrinter
}

// newOutputFlags are the -o flags of a command whose own formats are own (default the first).
func newOutputFlags(own ...string) *outputFlags {
	def := ""
	if len(own) > 0 {
		def = own[0]
	}
	return &outputFlags{print: genericclioptions.NewPrintFlags("").WithDefaultOutput(def).WithTypeSetter(scheme.Shared()), own: own}
}

// addFlags registers -o (what usage says, then the formats of kubectl) and the flags of the
// template and managed-fields printers.
func (f *outputFlags) addFlags(cmd *cobra.Command, usage string) {
	cmd.Flags().StringVarP(f.print.OutputFormat, "output", "o", *f.print.OutputFormat,
		usage+"; or jsonpath=TEMPLATE, go-template=TEMPLATE and the other kubectl formats")
	f.print.OutputFlagSpecified = func() bool { return cmd.Flag("output").Changed }
	f.print.JSONYamlPrintFlags.AddFlags(cmd)
	f.print.TemplatePrinterFlags.AddFlags(cmd)
	completions := append(slices.DeleteFunc(slices.Clone(f.own), func(s string) bool { return s == "" }), "yaml", "json", "name", "jsonpath=", "go-template=")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(completions, cobra.ShellCompDirectiveNoFileComp))
}

// format is the -o value ("" when not given and the command's default is its own sentence).
func (f *outputFlags) format() string { return *f.print.OutputFormat }

// setFormat changes the format before validate (a dry run prints yaml by default).
func (f *outputFlags) setFormat(format string) { *f.print.OutputFormat = format }

// ownFormat is true when the command prints the output itself (its sentence, its table).
func (f *outputFlags) ownFormat() bool {
	template := f.print.TemplatePrinterFlags.TemplateArgument
	if template != nil && *template != "" && !f.print.OutputFlagSpecified() {
		return false // --template alone means -o go-template, as in kubectl
	}
	return slices.Contains(f.own, f.format())
}

// validate checks -o and makes the printer of a PrintFlags format.
func (f *outputFlags) validate() error {
	if f.ownFormat() {
		return nil
	}
	p, err := f.print.ToPrinter()
	if genericclioptions.IsNoCompatiblePrinterError(err) {
		main := append(slices.DeleteFunc(slices.Clone(f.own), func(s string) bool { return s == "" }), "yaml", "json", "name")
		var more []string
		for _, a := range f.print.AllowedFormats() {
			if !slices.Contains(main, a) {
				more = append(more, a)
			}
		}
		return fmt.Errorf("--output (-o) must be one of %s, not %q (or one of kubectl's other formats: %s)",
			strings.Join(main, ", "), f.format(), strings.Join(more, ", "))
	}
	if err != nil {
		return fmt.Errorf("--output (-o) %s: %w", f.format(), err)
	}
	f.printer = p
	return nil
}

// printObject prints an object (or a list) in the -o format. Typed objects get their apiVersion
// and kind from the scheme.
func (f *outputFlags) printObject(obj runtime.Object, w io.Writer) error {
	if f.printer == nil {
		return fmt.Errorf("no printer for -o %q", f.format())
	}
	return f.printer.PrintObj(obj, w)
}

// printObjects prints objects like kubectl -o: one object (single) as itself; otherwise a v1 List
// (a jsonpath or template sees .items), except for name: one name a line.
func (f *outputFlags) printObjects(w io.Writer, single bool, objs []runtime.Object) error {
	if single && len(objs) == 1 {
		return f.printObject(objs[0], w)
	}
	if f.format() == "name" {
		for _, obj := range objs {
			if err := f.printObject(obj, w); err != nil {
				return err
			}
		}
		return nil
	}
	list := &metav1.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}}
	for _, obj := range objs {
		list.Items = append(list.Items, runtime.RawExtension{Object: obj})
	}
	return f.printObject(list, w)
}

// servingOutput is the -o flag of the commands that change one serving. Without it they say what
// they did in a sentence; with it they print the serving as it is after the change, as kubectl's
// set, scale and rollout commands do, so a script can read it back without a second call.
type servingOutput struct{ output *outputFlags }

func (s *servingOutput) addOutputFlag(cmd *cobra.Command) {
	s.output = newOutputFlags("")
	s.output.addFlags(cmd, "Print the changed serving instead of a sentence: yaml, json or name")
}

func (s *servingOutput) validateOutput() error {
	if s.output == nil { // built by the live view's actions, which print nothing
		return nil
	}
	return s.output.validate()
}

// printChanged prints the sentence (a format and its arguments), or with -o the serving.
func (s *servingOutput) printChanged(w io.Writer, ms *v1.ModelServing, sentence string, args ...any) error {
	if s.output == nil || s.output.ownFormat() {
		_, err := fmt.Fprintf(w, sentence, args...)
		return err
	}
	return s.output.printObject(ms, w)
}

// wantsObject is true when -o asks for the serving rather than the sentence.
func (s *servingOutput) wantsObject() bool { return s.output != nil && !s.output.ownFormat() }
