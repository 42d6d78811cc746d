package cli

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/kubectl-llm/kubectl-llm/pkg/scheme"
	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// servingTarget is what every command that works on servings shares: the NAME it was given,
// and the client and namespace the kubectl connection flags resolve (or RootOptions.Client, which
// tests set). Complete fills it from the arguments without judging them; the argument checks are
// Validate's (validateOneName).
type servingTarget struct {
	Name      string
	args      []string
	client    client.WithWatch
	namespace string
}

// complete takes NAME from the first argument and resolves the client and the namespace.
func (t *servingTarget) complete(root *RootOptions, args []string) error {
	t.args = args
	if len(args) > 0 {
		t.Name = args[0]
	}
	var err error
	t.client, t.namespace, err = root.clientAndNamespace()
	return err
}

// validateOneName checks that exactly one, non-empty, NAME was given; usage is the command line
// the error shows.
func (t *servingTarget) validateOneName(usage string) error {
	_, err := exactlyOneName(t.args, usage)
	return err
}

// clientAndNamespace resolves the client and the namespace every command works in.
func (o *RootOptions) clientAndNamespace() (client.WithWatch, string, error) {
	ns, _, err := o.ConfigFlags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, "", fmt.Errorf("read the namespace from the kubeconfig: %w", err)
	}
	if o.Client != nil {
		return o.Client, ns, nil
	}
	cfg, err := o.ConfigFlags.ToRESTConfig()
	if err != nil {
		return nil, "", fmt.Errorf("no cluster configured: %w (set --kubeconfig, KUBECONFIG or --server)", err)
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme.Shared()})
	if err != nil {
		return nil, "", explain(err, cfg.Host)
	}
	o.Client = c
	return c, ns, nil
}

// host is the API server the flags point at, for error messages.
func (o *RootOptions) host() string {
	cfg, err := o.ConfigFlags.ToRESTConfig()
	if err != nil {
		return ""
	}
	return cfg.Host
}

// completeServingNames completes the first argument with the servings of the namespace.
func completeServingNames(o *RootOptions) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, ns, err := o.clientAndNamespace()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		items, _, err := listServings(cmd.Context(), c, client.InNamespace(ns))
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		var names []cobra.Completion
		for _, ms := range items {
			if strings.HasPrefix(ms.Name, toComplete) {
				names = append(names, ms.Name)
			}
		}
		sort.Strings(names)
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// runE wires the kubectl pattern: Complete, Validate, Run with the command's context.
func runE(complete func(cmd *cobra.Command, args []string) error, validate func() error, run func(ctx context.Context) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := complete(cmd, args); err != nil {
			return err
		}
		if err := validate(); err != nil {
			return err
		}
		return run(cmd.Context())
	}
}

// exactlyOneName checks the NAME argument of the commands that act on one serving.
func exactlyOneName(args []string, usage string) (string, error) {
	switch len(args) {
	case 1:
		if args[0] == "" {
			return "", fmt.Errorf("NAME must not be empty: %s", usage)
		}
		return args[0], nil
	case 0:
		return "", fmt.Errorf("NAME is required: %s", usage)
	default:
		return "", fmt.Errorf("expected one NAME, got %d arguments (%s): %s", len(args), strings.Join(args, " "), usage)
	}
}
