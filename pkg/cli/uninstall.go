package cli

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

// UninstallOptions remove everything install applied, in the order that strands nothing.
type UninstallOptions struct {
	*RootOptions
	Timeout time.Duration

	client client.WithWatch
}

func newUninstallCommand(root *RootOptions) *cobra.Command {
	o := &UninstallOptions{RootOptions: root}
	cmd := &cobra.Command{
		Use:   "uninstall",
		Short: "Delete every serving, then the operator, then the CRDs",
		Long: `Remove kubectl llm from the cluster in the order that strands nothing:

  1. delete every ModelServing, in every namespace;
  2. wait until they are gone: the operator removes their finalizer once their groups are gone;
  3. delete the operator (Deployment, RBAC, namespace kubectl-llm-system);
  4. delete the ModelServing CRD, and the LeaderWorkerSet CRD only if kubectl llm installed it.

If a serving keeps its finalizer past --timeout (the operator is not running, say), uninstall stops
before step 3 and says which servings are stuck: removing the operator or the CRD then would leave
them, and their children, behind.`,
		Example: "  kubectl llm uninstall\n  kubectl llm uninstall --timeout 10m",
		Args:    cobra.NoArgs,
		RunE:    runE(o.Complete, o.Validate, o.Run),
	}
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 5*time.Minute, "How long to wait for the servings to be deleted")
	return cmd
}

// Complete resolves the client.
func (o *UninstallOptions) Complete(_ *cobra.Command, _ []string) error {
	var err error
	o.client, _, err = o.clientAndNamespace()
	return err
}

// Validate checks --timeout.
func (o *UninstallOptions) Validate() error {
	if o.Timeout <= 0 {
		return fmt.Errorf("--timeout must be a positive duration such as 5m, not %s", o.Timeout)
	}
	return nil
}

// Run deletes in order and stops when the servings do not go.
func (o *UninstallOptions) Run(ctx context.Context) error {
	host := o.host()
	if err := o.deleteServings(ctx, host); err != nil {
		return err
	}
	objs, err := manifests("embedded") // a superset of the default manifests
	if err != nil {
		return err
	}
	var crds []*unstructured.Unstructured
	for i := len(objs) - 1; i >= 0; i-- {
		u := objs[i]
		if u.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, u)
			continue
		}
		if err := o.delete(ctx, u, host); err != nil {
			return err
		}
	}
	for _, u := range crds {
		if u.GetName() == lwsCRDName {
			live := u.DeepCopy()
			if err := o.client.Get(ctx, client.ObjectKeyFromObject(u), live); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return fmt.Errorf("read %s: %w", resourceName(u), explain(err, host))
			}
			if !installedByUs(live) {
				fmt.Fprintf(o.Streams.Out, "%s kept (not installed by kubectl llm)\n", resourceName(u))
				continue
			}
		}
		if err := o.delete(ctx, u, host); err != nil {
			return err
		}
		if err := o.waitGone(ctx, u); err != nil {
			return err
		}
	}
	return nil
}

// waitGone waits until a deleted CRD is gone: the API server first removes its objects.
func (o *UninstallOptions) waitGone(ctx context.Context, u *unstructured.Unstructured) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, o.Timeout, true, func(ctx context.Context) (bool, error) {
		live := u.DeepCopy()
		err := o.client.Get(ctx, client.ObjectKeyFromObject(u), live)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		return timedOut(err, fmt.Errorf("%s is still being deleted after %s: %w", resourceName(u), o.Timeout, err))
	}
	return nil
}

func (o *UninstallOptions) delete(ctx context.Context, u *unstructured.Unstructured, host string) error {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(u.GroupVersionKind())
	obj.SetName(u.GetName())
	obj.SetNamespace(u.GetNamespace())
	err := o.client.Delete(ctx, obj, client.PropagationPolicy("Background"))
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return nil
	case err != nil:
		return fmt.Errorf("delete %s: %w", resourceName(u), explain(err, host))
	}
	_, err = fmt.Fprintf(o.Streams.Out, "%s deleted\n", resourceName(u))
	return err
}

// deleteServings deletes every serving and waits, by watching, until they are all gone.
func (o *UninstallOptions) deleteServings(ctx context.Context, host string) error {
	var list v1.ModelServingList
	if err := o.client.List(ctx, &list); err != nil {
		if explain(err, host) == errCRDMissing {
			return nil // nothing to delete
		}
		return fmt.Errorf("list servings: %w", explain(err, host))
	}
	remaining := map[string]bool{}
	for i := range list.Items {
		ms := &list.Items[i]
		if err := o.client.Delete(ctx, ms); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete serving %s/%s: %w", ms.Namespace, ms.Name, explain(err, host))
		}
		remaining[ms.Namespace+"/"+ms.Name] = true
		fmt.Fprintf(o.Streams.Out, "%s deleted (namespace %s)\n", qualified(ms.Name), ms.Namespace)
	}
	if len(remaining) == 0 {
		return nil
	}
	waitCtx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	stuck := map[string]*v1.ModelServing{}
	onList := func(items []servingItem) (bool, error) {
		clear(stuck)
		for i := range items {
			stuck[items[i].Namespace+"/"+items[i].Name] = &items[i].ModelServing
		}
		return len(stuck) == 0, nil
	}
	onEvent := func(t watch.EventType, it servingItem) (bool, error) {
		key := it.Namespace + "/" + it.Name
		if t == watch.Deleted {
			delete(stuck, key)
		} else {
			stuck[key] = &it.ModelServing
		}
		return len(stuck) == 0, nil
	}
	err := watchServings(waitCtx, o.client, "", "", onList, onEvent)
	if len(stuck) == 0 {
		return nil
	}
	if waitCtx.Err() == nil && ctx.Err() == nil && err != nil {
		return explain(err, host)
	}
	var names []string
	for key, ms := range stuck {
		names = append(names, key+" (finalizers "+strings.Join(ms.Finalizers, ", ")+")")
	}
	sort.Strings(names)
	return &exitError{code: ExitTimedOut, err: fmt.Errorf("%d serving(s) still exist after %s: %s. The operator removes the finalizer %s once a serving's groups are gone: "+
		"is it running (kubectl -n kubectl-llm-system get deployment kubectl-llm-operator)? Not removing the operator or the CRDs, which would strand them",
		len(stuck), o.Timeout, strings.Join(names, "; "), v1.FinalizerChildren)}
}
