package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// WriteCommandsMarkdown renders the whole command tree as one Markdown page (docs/commands.md):
// every visible command with its usage, description, aliases, examples and own flags, and the
// flags every command shares once at the top. Defaults that depend on the machine (the home
// directory) are written as $HOME so the page is the same everywhere.
func WriteCommandsMarkdown(w io.Writer) error {
	root := NewRootCommand(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: io.Discard, ErrOut: io.Discard})
	home, _ := os.UserHomeDir()
	var b strings.Builder
	b.WriteString("# kubectl llm commands\n\n")
	b.WriteString("<!-- Generated from the cobra command tree by `go run ./hack/gendocs`; do not edit. -->\n\n")
	b.WriteString(root.Long + "\n\n")
	b.WriteString("## Commands\n\n")
	walk(root, func(c *cobra.Command) {
		if c == root {
			return
		}
		anchor := strings.ReplaceAll(c.CommandPath(), " ", "-")
		fmt.Fprintf(&b, "- [`%s`](#%s): %s\n", c.CommandPath(), anchor, c.Short)
	})
	b.WriteString("\n## Flags of every command\n\n```\n")
	b.WriteString(flagUsages(root.PersistentFlags(), home))
	b.WriteString("```\n")
	walk(root, func(c *cobra.Command) {
		if c == root {
			return
		}
		fmt.Fprintf(&b, "\n## %s\n\n%s\n\n", c.CommandPath(), c.Short)
		fmt.Fprintf(&b, "```\n%s\n```\n\n", c.UseLine())
		if c.Long != "" {
			b.WriteString(c.Long + "\n\n")
		}
		if len(c.Aliases) > 0 {
			fmt.Fprintf(&b, "Aliases: `%s`\n\n", strings.Join(c.Aliases, "`, `"))
		}
		if c.Example != "" {
			fmt.Fprintf(&b, "Examples:\n\n```\n%s\n```\n\n", c.Example)
		}
		if fl := c.NonInheritedFlags(); fl.HasAvailableFlags() {
			fmt.Fprintf(&b, "Flags:\n\n```\n%s```\n", flagUsages(fl, home))
		}
	})
	out := strings.ReplaceAll(b.String(), "\n\n\n", "\n\n")
	_, err := io.WriteString(w, strings.TrimRight(out, "\n")+"\n")
	return err
}

func walk(c *cobra.Command, fn func(*cobra.Command)) {
	if !c.IsAvailableCommand() && c.HasParent() {
		return
	}
	fn(c)
	for _, sub := range c.Commands() {
		walk(sub, fn)
	}
}

func flagUsages(fs *pflag.FlagSet, home string) string {
	fs.VisitAll(func(f *pflag.Flag) {
		if home != "" && strings.Contains(f.DefValue, home) {
			f.DefValue = strings.ReplaceAll(f.DefValue, home, "$HOME")
		}
	})
	fs.VisitAll(func(f *pflag.Flag) { f.Hidden = f.Hidden || f.Name == "help" })
	return fs.FlagUsagesWrapped(100)
}
