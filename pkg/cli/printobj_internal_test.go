package cli

import "testing"

// Every command with -o prints with the process's one scheme: a scheme of every client-go type
// is half a megabyte, and the binary builds every command at start (the operator too), so a scheme
// per command held fifteen of them for the life of the process.
func TestCommandsPrintWithOneScheme(t *testing.T) {
	a, b := newOutputFlags("table"), newOutputFlags("")
	if a.print.TypeSetterPrinter == nil || b.print.TypeSetterPrinter == nil {
		t.Fatal("the output flags set no type setter")
	}
	if a.print.TypeSetterPrinter.Typer != b.print.TypeSetterPrinter.Typer {
		t.Error("two commands' output flags hold two schemes: want the one shared scheme")
	}
}
